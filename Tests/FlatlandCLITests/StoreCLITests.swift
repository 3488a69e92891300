import Foundation
import Testing

@Suite("flatland ingest --store, dump")
struct StoreCLITests {
    static let page0 =
        #"{"offset":0,"total":5,"data":[{"uuid":"u-1","name":"A","friend":{"uuid":"u-2","age":3}},{"uuid":"u-3"}]}"#
    static let page1 = #"{"offset":3,"total":5,"data":[{"uuid":"u-4","x":[1,2,{"k":null}]},{"uuid":"u-1","name":"B"}]}"#
    static let other = #"[{"uuid":"d-1","os":"iOS","owner":{"uuid":"u-3","name":"C"}},{"uuid":"d-1","model":"m"}]"#

    @Test func ingestingIntoAFileThenDumpingGivesTheInMemoryDump() throws {
        let ws = try Workspace()
        try ws.write("p0.json", Self.page0)
        try ws.write("p1.json", Self.page1)
        try ws.write("o.json", Self.other)
        let memory = try ws.run(["ingest", "--endpoint", "/users?offset=0&count=2", "--dump", "p0.json", "p1.json"])
        #expect(memory.status == 0)
        // The same files, over two runs, into a file.
        let first = try ws.run(["ingest", "--endpoint", "/users?offset=0&count=2", "--store", "s.sqlite", "p0.json"])
        #expect(first.status == 0)
        let second = try ws.run([
            "ingest", "--endpoint", "/users?offset=0&count=2", "--store", "s.sqlite", "--dump", "p1.json",
        ])
        #expect(second.status == 0)
        let dump = try ws.run(["dump", "--store", "s.sqlite"])
        #expect(dump.status == 0)
        #expect(dump.stderr.isEmpty)
        #expect(!dump.stdout.isEmpty)
        #expect(dump.stdout == memory.stdout)
        #expect(second.stdout == memory.stdout)
        // Untyped ingest without an endpoint too.
        let m2 = try ws.run(["ingest", "--dump", "o.json"])
        _ = try ws.run(["ingest", "--store", "o.sqlite", "o.json"])
        #expect(try ws.run(["dump", "--store", "o.sqlite"]).stdout == m2.stdout)
    }

    @Test func dumpRefusesWhatIsNotAStore() throws {
        let ws = try Workspace()
        try ws.write("notes.txt", "not a database at all, just some text that is long enough\n")
        let run = try ws.run(["dump", "--store", "notes.txt"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("not a SQLite database"))
        let missing = try ws.run(["dump", "--store", "nothing.sqlite"])
        #expect(missing.status == 2)
        #expect(!FileManager.default.fileExists(atPath: ws.url.appendingPathComponent("nothing.sqlite").path))
    }
}
