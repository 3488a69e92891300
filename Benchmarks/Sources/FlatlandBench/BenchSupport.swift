import FlatlandJSON
import Foundation

// The few command-line helpers the benchmark commands share. The shipped `flatland` has its own;
// these are the benchmarks', written for what they need (no `--chunk-size` checks, no stdin).

/// A failure with its exit code: 1 for invalid input or a failed measurement, 2 for usage.
struct CLIFailure: Error {
    var message: String
    var exitCode: Int32

    static func invalid(_ message: String) -> CLIFailure { CLIFailure(message: message, exitCode: 1) }
    static func usage(_ message: String) -> CLIFailure { CLIFailure(message: message, exitCode: 2) }
}

/// Writes to the standard streams at once (progress lines are read live by scripts).
enum FileHandleOutput {
    case standardOutput, standardError

    func write(_ text: String) {
        let handle: FileHandle = self == .standardOutput ? .standardOutput : .standardError
        try? handle.write(contentsOf: Data(text.utf8))
    }
}

/// One compact JSON object as one line on standard output.
func printLine(_ object: JSONObject) {
    var writer = JSONWriter()
    writer.value(.object(object))
    FileHandleOutput.standardOutput.write(writer.string + "\n")
}

/// A file read in chunks of a fixed size, for the streaming-memory measurement.
struct InputFile {
    let path: String

    init(path: String) throws {
        guard FileManager.default.isReadableFile(atPath: path) else { throw CLIFailure.usage("\(path): cannot read") }
        self.path = path
    }

    /// Calls `body` with each chunk of at most `size` bytes, in order.
    func forEachChunk(size: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw CLIFailure.usage("\(path): cannot open") }
        defer { try? handle.close() }
        while let chunk = try handle.read(upToCount: size), !chunk.isEmpty {
            try chunk.withUnsafeBytes { try body($0) }
        }
    }
}

/// Seconds on a monotonic clock.
func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// `value` with `digits` decimals.
func formatted(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

/// Runs `body` on a dispatch thread, off Swift's cooperative pool (which the in-process server's
/// handlers need), and waits for it.
func runBlocking<R: Sendable>(_ body: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: body()) }
    }
}

extension JSONValue {
    /// A whole number, for the reports' JSON lines.
    static func integer(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }
}
