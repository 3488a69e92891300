import Flatland
import FlatlandJSON
import FlatlandSQLite
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("SQLite crash")
struct CrashTests {
    static let items = 200

    /// Starts `FlatlandCrashHelper stream`, kills it with SIGKILL after `after` batches were
    /// reported committed, and returns the last batch it reported.
    static func killMidStream(path: String, after: Int) throws -> Int {
        try killChild(["stream", "--store", path, "--items", "\(items)"]) { $0 == "committed \(after)" }
    }

    /// Runs `FlatlandCrashHelper` with `arguments`, kills it with SIGKILL once it printed a line `until`
    /// accepts (or ended), and returns the last batch it reported (`committed <k>` lines) before
    /// it died.
    static func killChild(_ arguments: [String], until: (String) -> Bool) throws -> Int {
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("FlatlandCrashHelper")
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var reported = -1
        var buffer = Data()
        let reader = out.fileHandleForReading
        reading: while true {
            let chunk = reader.availableData
            if chunk.isEmpty { break }  // the child ended
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                if line.hasPrefix("committed "), let k = Int(line.dropFirst(10)) { reported = k }
                if until(line) { break reading }
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // The child kept committing while its lines were read: what it reported before the kill
        // is also in the pipe still, and is what it committed (at most one batch more).
        buffer.append(reader.readDataToEndOfFile())
        while let newline = buffer.firstIndex(of: 0x0A) {
            let line = String(decoding: buffer[..<newline], as: UTF8.self)
            buffer.removeSubrange(...newline)
            if line.hasPrefix("committed "), let k = Int(line.dropFirst(10)) { reported = k }
        }
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
        return reported
    }

    @Test(arguments: [5, 40])
    func aKilledWriterLeavesWholeBatchesOnly(after: Int) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let reported = try Self.killMidStream(path: path, after: after)
        #expect(reported >= after)

        let store = Store(persistence: try SQLitePersistence(path: path))
        let counter = try #require(store.record(id: "cn-counter"))
        let n = try #require(Int(counter.fields["n"]?.numberValue?.description ?? ""))
        // Every batch the child reported is there; at most the one it was writing more.
        #expect(n >= reported)
        #expect(n <= reported + 1)
        #expect(store.count(prefix: "it") == (n + 1) * Self.items)
        #expect(store.ids(prefix: "it").count == (n + 1) * Self.items)
        for i in [0, Self.items / 2, Self.items - 1] {
            #expect(store.record(id: "it-\(n)-\(i)")?.fields["batch"] == .number(JSONNumber(n)))
        }
        #expect(!store.contains("it-\(n + 1)-0"))
        #expect(store.collections(kind: .task).map(\.displayIdentifier) == (0...n).map { "batch-\($0)" })
        #expect(store.collection(displayIdentifier: "/counter")?.knownItems == ["cn-counter"])
        // The file is usable: it takes the next batch.
        try store.ingest(bytes(#"{"uuid":"cn-counter","n":-1}"#))
        #expect(store.record(id: "cn-counter")?.fields["n"] == .number(JSONNumber(-1)))
    }
}
