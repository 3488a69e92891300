import ArgumentParser
import Foundation

/// `flatland-bench`: the benchmark commands, in the benchmark package so that the shipped
/// `flatland` carries no harness and no allocation counter.
///
/// Exit codes as `flatland`'s: 0 success, 1 a failed measurement or bar, 2 usage or I/O problems.
@main
struct FlatlandBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flatland-bench",
        abstract: "Measure Flatland: parse and ingest, SQLite, HTTP, the table server, sync, load.",
        subcommands: [
            BenchCommand.self, SQLiteBenchCommand.self, BenchHTTPCommand.self, TableBenchCommand.self,
            SyncBenchCommand.self, BenchLoadCommand.self, FilterBenchCommand.self,
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
            Foundation.exit(failure.exitCode)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            // Usage problems exit 2, as `flatland`'s do.
            FileHandleOutput.standardError.write(fullMessage(for: error) + "\n")
            Foundation.exit(2)
        }
    }
}
