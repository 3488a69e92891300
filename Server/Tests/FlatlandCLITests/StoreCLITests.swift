import FlatlandJSON
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("flatland ingest --store, dump")
struct StoreCLITests {
    static let page0 =
        #"{"offset":0,"total":5,"data":[{"uuid":"u-1","name":"A","friend":{"uuid":"u-2","age":3}},{"uuid":"u-3"}]}"#
    static let page1 = #"{"offset":3,"total":5,"data":[{"uuid":"u-4","x":[1,2,{"k":null}]},{"uuid":"u-1","name":"B"}]}"#
    static let other = #"[{"uuid":"d-1","os":"iOS","owner":{"uuid":"u-3","name":"C"}},{"uuid":"d-1","model":"m"}]"#

    @Test func ingestingIntoAFileThenDumpingGivesTheInMemoryDump() async throws {
        let ws = try Workspace()
        try ws.write("p0.json", Self.page0)
        try ws.write("p1.json", Self.page1)
        try ws.write("o.json", Self.other)
        let memory = try await ws.run([
            "ingest", "--endpoint", "/users?offset=0&count=2", "--dump", "p0.json", "p1.json",
        ])
        #expect(memory.status == 0)
        // The same files, over two runs, into a file.
        let first = try await ws.run([
            "ingest", "--endpoint", "/users?offset=0&count=2", "--store", "s.sqlite", "p0.json",
        ])
        #expect(first.status == 0)
        let second = try await ws.run([
            "ingest", "--endpoint", "/users?offset=0&count=2", "--store", "s.sqlite", "--dump", "p1.json",
        ])
        #expect(second.status == 0)
        let dump = try await ws.run(["dump", "--store", "s.sqlite"])
        #expect(dump.status == 0)
        #expect(dump.stderr.isEmpty)
        #expect(!dump.stdout.isEmpty)
        #expect(dump.stdout == memory.stdout)
        #expect(second.stdout == memory.stdout)
        // Untyped ingest without an endpoint too.
        let m2 = try await ws.run(["ingest", "--dump", "o.json"])
        _ = try await ws.run(["ingest", "--store", "o.sqlite", "o.json"])
        #expect(try await ws.run(["dump", "--store", "o.sqlite"]).stdout == m2.stdout)
    }

    @Test func dumpRefusesWhatIsNotAStore() async throws {
        let ws = try Workspace()
        try ws.write("notes.txt", "not a database at all, just some text that is long enough\n")
        let run = try await ws.run(["dump", "--store", "notes.txt"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("not a SQLite database"))
        let missing = try await ws.run(["dump", "--store", "nothing.sqlite"])
        #expect(missing.status == 2)
        #expect(!FileManager.default.fileExists(atPath: ws.url.appendingPathComponent("nothing.sqlite").path))
    }

    @Test func idsWithNULSurviveIngestStoreAndDump() async throws {
        let ws = try Workspace()
        try ws.write(
            "nul.json",
            #"{"offset":0,"total":3,"data":[{"uuid":"u-a\u0000b","n":1},{"uuid":"u-a\u0000c","n":2},{"uuid":"u-a","n":3}]}"#
        )
        let memory = try await ws.run(["ingest", "--endpoint", "/users", "--dump", "nul.json"])
        #expect(memory.status == 0)
        let ingest = try await ws.run(["ingest", "--endpoint", "/users", "--store", "s.sqlite", "nul.json"])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let dump = try await ws.run(["dump", "--store", "s.sqlite"])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.stdout == memory.stdout)
        let entities = try dumpLines(dump.stdout).filter { $0["kind"] == .string("entity") }
        #expect(entities.compactMap { $0["uuid"]?.stringValue } == ["u-a", "u-a\u{0}b", "u-a\u{0}c"])
        let endpoint = try #require(dumpLines(dump.stdout).first { $0["kind"] == .string("endpoint") })
        #expect(endpoint["items"] == .array([.string("u-a\u{0}b"), .string("u-a\u{0}c"), .string("u-a")]))
    }

    /// A store file of 3,000 padded entities (many pages), written by the CLI.
    static func largeStore(_ ws: Workspace, name: String = "big.sqlite") async throws -> String {
        let pad = String(repeating: "p", count: 400)
        let items = (0..<3000).map { #"{"uuid":"u-\#($0)","pad":"\#(pad)"}"# }
        try ws.write("big.json", #"{"offset":0,"total":3000,"data":["# + items.joined(separator: ",") + "]}")
        let run = try await ws.run(["ingest", "--endpoint", "/users", "--store", name, "big.json"])
        #expect(run.status == 0, "\(run.stderr)")
        return ws.url.appendingPathComponent(name).path
    }

    @Test func aDamagedStoreFailsDumpVerifyAndIngest() async throws {
        let ws = try Workspace()
        let path = try await Self.largeStore(ws)
        let good = try await ws.run(["dump", "--store", "big.sqlite", "--verify"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout == "big.sqlite: ok\n")
        let before = try await ws.run(["dump", "--store", "big.sqlite"])
        #expect(before.status == 0)
        // 4 KiB overwritten in the middle of the file.
        var data = try #require(FileManager.default.contents(atPath: path))
        let start = data.count / 4096 / 2 * 4096
        for i in start..<start + 4096 { data[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        try data.write(to: URL(fileURLWithPath: path))

        let verify = try await ws.run(["dump", "--store", "big.sqlite", "--verify"])
        #expect(verify.status == 1)
        #expect(verify.stdout.hasPrefix("big.sqlite: corrupt, "))
        #expect(verify.stderr.hasPrefix("error: "))
        let dump = try await ws.run(["dump", "--store", "big.sqlite"])
        #expect(dump.status == 1)
        #expect(dump.stderr.hasPrefix("error: "))
        #expect(dump.stderr.contains("corrupt"))
        try ws.write("more.json", #"{"uuid":"u-new","n":1}"#)
        let ingest = try await ws.run(["ingest", "--store", "big.sqlite", "more.json"])
        #expect(ingest.status == 1)
        #expect(ingest.stderr.hasPrefix("error: "))
    }

    @Test func aStoreTooDamagedToOpenIsVerifiedAsCorrupt() async throws {
        let ws = try Workspace()
        let path = try await Self.largeStore(ws)
        // The schema page, after the 100-byte header.
        var data = try #require(FileManager.default.contents(atPath: path))
        for i in 100..<4096 { data[i] = 0xA5 }
        try data.write(to: URL(fileURLWithPath: path))
        let verify = try await ws.run(["dump", "--store", "big.sqlite", "--verify"])
        #expect(verify.status == 1)
        #expect(verify.stdout.hasPrefix("big.sqlite: corrupt, 1 problem\n"))
        let dump = try await ws.run(["dump", "--store", "big.sqlite"])
        #expect(dump.status == 1)
        #expect(dump.stderr.contains("corrupt"))
        #expect(FileManager.default.contents(atPath: path) == data)
    }

    @Test func dumpOpensReadOnlyAndLeavesTheFileAsItIs() async throws {
        let ws = try Workspace()
        let path = try await Self.largeStore(ws)
        let before = FileManager.default.contents(atPath: path)
        let dump = try await ws.run(["dump", "--store", "big.sqlite"])
        #expect(dump.status == 0)
        #expect(FileManager.default.contents(atPath: path) == before)
    }

    /// Runs `flatland` as an unprivileged user when the tests run as root (root ignores
    /// permission bits), so that a read-only directory really cannot be written.
    static func runUnprivileged(_ ws: Workspace, _ arguments: [String]) async throws -> CLIRun {
        guard getuid() == 0 else { return try await ws.run(arguments) }
        let flatland = CLI.productsDirectory.appendingPathComponent("flatland").path
        return try await CLI.run(
            ["--reuid=65534", "--regid=65534", "--clear-groups", flatland] + arguments,
            executable: URL(fileURLWithPath: "/usr/bin/setpriv"), directory: ws.url)
    }

    @Test func aStoreInAReadOnlyDirectoryCanBeDumped() async throws {
        let ws = try Workspace()
        try ws.write("p0.json", Self.page0)
        let memory = try await ws.run(["ingest", "--endpoint", "/users?offset=0&count=2", "--dump", "p0.json"])
        let store = ws.url.appendingPathComponent("ro")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        let ingest = try await ws.run([
            "ingest", "--endpoint", "/users?offset=0&count=2", "--store", "ro/s.sqlite", "p0.json",
        ])
        #expect(ingest.status == 0)
        // Readable by anyone, writable by no one (but root).
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: ws.url.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: store.path + "/s.sqlite")
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: store.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: store.path) }
        // The directory really is read-only for the user the dump runs as.
        let write = try await Self.runUnprivileged(ws, ["ingest", "--store", "ro/other.sqlite", "p0.json"])
        #expect(write.status != 0)
        let dump = try await Self.runUnprivileged(ws, ["dump", "--store", "ro/s.sqlite"])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.stdout == memory.stdout)
        let verify = try await Self.runUnprivileged(ws, ["dump", "--store", "ro/s.sqlite", "--verify"])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.path) == ["s.sqlite"])
    }

    @Test func aCreateThatFailsOnAFullDiskLeavesNoFile() async throws {
        let ws = try Workspace()
        try ws.write("p0.json", Self.page0)
        // A file size limit of 0 blocks: SQLite creates the file, then its first write fails
        // (EFBIG, the signal ignored), as on a full disk.
        let flatland = CLI.productsDirectory.appendingPathComponent("flatland").path
        let run = try await CLI.run(
            [
                "-c", "ulimit -f 0; trap '' XFSZ; exec \"$0\" \"$@\"", flatland, "ingest", "--store", "new.sqlite",
                "p0.json",
            ],
            executable: URL(fileURLWithPath: "/bin/sh"), directory: ws.url)
        #expect(run.status != 0)
        #expect(run.stderr.hasPrefix("error: "))
        #expect(try FileManager.default.contentsOfDirectory(atPath: ws.url.path) == ["p0.json"])
    }
}
