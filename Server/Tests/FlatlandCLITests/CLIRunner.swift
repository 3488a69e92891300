import Foundation
import Synchronization
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

    /// Runs `flatland` (or `executable`) with `arguments` and waits for it to exit.
    ///
    /// The wait is on a thread of its own, never on one of Swift's cooperative pool: that pool has
    /// as many threads as cores (two here), and a test holding one for as long as its child runs
    /// left the suite two children at a time, whatever else was ready to run.
    static func run(_ arguments: [String], stdin: Data? = nil, executable: URL? = nil, directory: URL? = nil)
        async throws -> CLIRun
    {
        try await offPool { try runWaiting(arguments, stdin: stdin, executable: executable, directory: directory) }
    }

    private static func runWaiting(_ arguments: [String], stdin: Data?, executable: URL?, directory: URL?) throws
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
        // Both pipes are read at once: read one after the other, a child that filled the second
        // (64 KiB) before closing the first would wait forever.
        let errors = Drain(err.fileHandleForReading)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.wait()
        process.waitUntilExit()
        return CLIRun(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

/// Reads a file handle to its end on a thread of its own.
final class Drain: Sendable {
    private let data = Mutex(Data())
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let read = handle.readDataToEndOfFile()
            data.withLock { $0 = read }
            done.signal()
        }
    }

    /// Everything read, once the handle's end is reached.
    func wait() -> Data {
        done.wait()
        return data.withLock { $0 }
    }
}

/// Runs `body`, which blocks (waits for a child process), on a new thread and awaits its result.
func offPool<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
