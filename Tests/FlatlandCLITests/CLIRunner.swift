import Foundation
import Testing

/// Runs the built `flatland` executable and captures what it prints.
struct CLIRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum CLI {
    /// The directory holding the built products (next to the test bundle).
    static var productsDirectory: URL {
        let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") }
        if let bundle { return bundle.bundleURL.deletingLastPathComponent() }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    static func run(_ arguments: [String], stdin: Data? = nil) throws -> CLIRun {
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("flatland")
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CLIRun(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

@Suite struct CLISmokeTests {
    @Test func parseAcceptsValidJSON() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("ok.json")
        try Data(#"{"a":[1,2,3]}"#.utf8).write(to: file)
        let run = try CLI.run(["parse", file.path])
        #expect(run.status == 0)
        #expect(run.stdout.isEmpty)
    }
}
