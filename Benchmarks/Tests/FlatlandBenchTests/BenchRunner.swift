import FlatlandJSON
import Foundation

/// What one run of the built `flatland-bench` printed.
struct BenchRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the built `flatland-bench` (next to the test bundle) and captures what it prints.
enum CLI {
    static var productsDirectory: URL {
        if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    static func run(_ arguments: [String], directory: URL? = nil) throws -> BenchRun {
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("flatland-bench")
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        (process.standardOutput, process.standardError) = (out, err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Both pipes are drained at once, so that a long report on one never blocks the child.
        let errData = LockedData()
        let drain = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        drain.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errData.isSet { usleep(1000) }
        return BenchRun(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.data, as: UTF8.self))
    }
}

/// One `Data` handed from the draining thread.
private final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Data?
    func set(_ data: Data) { lock.withLock { value = data } }
    var isSet: Bool { lock.withLock { value != nil } }
    var data: Data { lock.withLock { value ?? Data() } }
}

/// A temporary directory for one test, removed with it.
final class Workspace {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `text` to `name` inside the workspace.
    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }
}

/// A failure of a test's own making (an answer that is not what the test can read).
struct TableTestFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A JSON integer's value.
func integer(_ value: JSONValue?) -> Int? {
    value?.numberValue.flatMap { Int($0.text) }
}
