import ArgumentParser

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `flatland`: the command-line face of Flatland.
///
/// Exit codes: 0 success, 1 invalid input (the JSON, or a response), 2 usage or I/O problems.
@main
struct FlatlandCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flatland",
        abstract: "Parse, ingest and inspect JSON the way Flatland does.",
        subcommands: [
            ParseCommand.self, IngestCommand.self, DumpCommand.self, GenerateCommand.self, ServeCommand.self,
            DemoCommand.self, TableCommand.self, LocalCommand.self, SyncCommand.self,
        ]
    )

    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CLIFailure {
            FileHandleOutput.standardError.write("error: \(failure.message)\n")
            LibC.exit(failure.exitCode)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)
            }
            // Usage problems exit 2, as the command-line contract says.
            FileHandleOutput.standardError.write(fullMessage(for: error) + "\n")
            LibC.exit(2)
        }
    }
}

/// A failure with its exit code: 1 for invalid input, 2 for usage or I/O.
struct CLIFailure: Error {
    var message: String
    var exitCode: Int32

    static func invalid(_ message: String) -> CLIFailure { CLIFailure(message: message, exitCode: 1) }
    static func usage(_ message: String) -> CLIFailure { CLIFailure(message: message, exitCode: 2) }
}

/// Unbuffered writes to the standard streams.
enum FileHandleOutput {
    case standardOutput, standardError

    func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = LibC.write(
                    self == .standardOutput ? 1 : 2, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }
}
