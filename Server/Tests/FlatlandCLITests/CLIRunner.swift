import Foundation
import Testing

/// Runs the built `flatland` executable and captures what it prints.
struct CLIRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// The values of `--transport` (table, sync, demo): the cases that talk HTTP run on each.
let transports = ["urlsession", "asynchttpclient"]

/// `--transport` and its value, or nothing for the platform's default.
func transportOption(_ transport: String?) -> [String] { transport.map { ["--transport", $0] } ?? [] }

enum CLI {
    /// The directory holding the built products (next to the test bundle).
    static var productsDirectory: URL {
        let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") }
        if let bundle { return bundle.bundleURL.deletingLastPathComponent() }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    static func run(_ arguments: [String], stdin: Data? = nil, executable: URL? = nil, directory: URL? = nil) throws
        -> CLIRun
    {
        let process = Process()
        process.executableURL = executable ?? productsDirectory.appendingPathComponent("flatland")
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
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
