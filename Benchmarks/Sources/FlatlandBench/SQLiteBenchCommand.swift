import ArgumentParser
import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandSQLite
import Foundation

/// `flatland bench-sqlite`: persisted against in-memory ingest, and a cold open of a large file.
struct SQLiteBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-sqlite",
        abstract: "Measure ingest into a SQLite store against the in-memory store, and a cold open and lookup.",
        discussion: """
            Ingest: the generated seed-shaped dataset into a fresh in-memory store and into a fresh
            SQLite file, interleaved, median of the rounds. Cold open: a file of --entities small
            entities is built once (kept at --large-file if given), then opened by a new store and
            one entity looked up by id; the open is also timed on a 1,000-entity file for scale.
            Build in release mode: swift run -c release flatland bench-sqlite
            """)

    @Option(help: "Size of the generated seed-shaped dataset, in MB.")
    var seedSize = 10

    @Option(help: "Rounds per contender (the median is reported).")
    var rounds = 3

    @Option(help: "Entities in the large file for the cold open (0 skips it).")
    var entities = 1_000_000

    @Option(help: "Keep (and reuse) the large file here instead of a temporary one.")
    var largeFile: String?

    @Option(help: "Commits of one 50-row page each for the per-commit cost (0 skips it).")
    var smallCommits = 200

    @Flag(help: "Print one JSON object instead of text (sqlite_vs_memory and the rest).")
    var json = false

    func run() throws {
        let log = FileHandleOutput.standardError
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flatland-bench-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let workload = Workload.seed(megabytes: seedSize)
        let registry = seedFixtureRegistry()
        log.write("measuring seed-\(seedSize)MB ingest, in memory and into SQLite, \(rounds) rounds...\n")
        var memory: [Double] = []
        var persisted: [Double] = []
        var persistedCPU: [Double] = []
        var withClose: [Double] = []
        var count = 0
        for round in 0...rounds {
            let path = directory + "/ingest-\(round).sqlite"
            let inMemory = try Bench.time { count = try Self.ingest(workload.bytes, into: Store(registry: registry)) }
            let persistence = try SQLitePersistence(path: path)
            let cpuStart = Self.cpuSeconds()
            let onDisk = try Bench.time {
                let stored = try Self.ingest(workload.bytes, into: Store(registry: registry, persistence: persistence))
                guard stored == count else { throw CLIFailure.invalid("SQLite store holds \(stored), memory \(count)") }
            }
            let cpu = Self.cpuSeconds() - cpuStart
            // Closing waits for the queued checkpoint and folds the rest of the log into the file.
            let close = Bench.time { persistence.close() }
            try SQLitePersistence.removeFiles(atPath: path)
            if round > 0 {  // round 0 warms up
                memory.append(inMemory)
                persisted.append(onDisk)
                persistedCPU.append(cpu)
                withClose.append(onDisk + close)
            }
        }
        let memoryRate = Double(count) / Bench.median(memory)
        let persistedRate = Double(count) / Bench.median(persisted)
        let closedRate = Double(count) / Bench.median(withClose)
        var root: JSONObject = [
            "dataset": .string("seed-\(seedSize)MB"),
            "bytes": Self.number(Double(workload.bytes.count)),
            "entities": Self.number(Double(count)),
            "rounds": Self.number(Double(rounds)),
            "memory_entities_per_s": Self.number(memoryRate),
            "sqlite_entities_per_s": Self.number(persistedRate),
            "sqlite_vs_memory": Self.number(persistedRate / memoryRate),
            "sqlite_cpu_s": Self.number(Bench.median(persistedCPU)),
            "sqlite_with_close_entities_per_s": Self.number(closedRate),
            "sqlite_with_close_vs_memory": Self.number(closedRate / memoryRate),
        ]
        var lines = [
            "seed-\(seedSize)MB: \(count) entities, \(workload.bytes.count) bytes",
            "  in-memory ingest: \(formatted(memoryRate / 1e3, 1))k entities/s (\(formatted(Bench.median(memory), 3)) s)",
            "  SQLite ingest:    \(formatted(persistedRate / 1e3, 1))k entities/s (\(formatted(Bench.median(persisted), 3)) s)",
            "  ratio SQLite/in-memory (sqlite_vs_memory): \(formatted(persistedRate / memoryRate, 2))",
            "  SQLite ingest CPU time \(formatted(Bench.median(persistedCPU), 3)) s; ingest then close "
                + "(every checkpoint done): \(formatted(closedRate / 1e3, 1))k entities/s, "
                + "ratio \(formatted(closedRate / memoryRate, 2))",
        ]
        if smallCommits > 0 {
            log.write("measuring \(smallCommits) commits of one 50-row page each...\n")
            let small = try Self.smallCommits(smallCommits, registry: registry, directory: directory)
            root["small_commits"] = .object([
                "commits": Self.number(Double(smallCommits)),
                "rows_per_commit": Self.number(50),
                "memory_ms_per_commit": Self.number(small.memory * 1e3),
                "sqlite_ms_per_commit": Self.number(small.sqlite * 1e3),
                "sqlite_ms_per_commit_first_tenth": Self.number(small.sqliteFirst * 1e3),
                "sqlite_ms_per_commit_last_tenth": Self.number(small.sqliteLast * 1e3),
            ])
            lines.append(
                "pages of 50 rows, one commit each (\(smallCommits) pages into one growing endpoint list): "
                    + "in memory \(formatted(small.memory * 1e3, 3)) ms, SQLite \(formatted(small.sqlite * 1e3, 3)) ms "
                    + "per commit (SQLite: first tenth \(formatted(small.sqliteFirst * 1e3, 3)) ms, "
                    + "last tenth \(formatted(small.sqliteLast * 1e3, 3)) ms)")
        }
        if json {
            // The cold open is not part of the JSON output: it is a separate question.
            print(JSONValue.object(root).jsonString(pretty: true))
            return
        }
        for line in lines { print(line) }

        guard entities > 0 else { return }
        let small = directory + "/small.sqlite"
        try Self.build(path: small, entities: 1_000, log: log)
        let large = largeFile ?? directory + "/large.sqlite"
        if !FileManager.default.fileExists(atPath: large) {
            log.write("building a \(entities)-entity file at \(large)...\n")
            try Self.build(path: large, entities: entities, log: log)
        }
        // One untimed open first: the first open in a process also loads and sets up SQLite.
        do {
            let warmUp = try SQLitePersistence(path: small)
            _ = Store(persistence: warmUp).record(id: Self.id(1))
            warmUp.close()
        }
        for (path, size) in [(small, 1_000), (large, entities)] {
            var opens: [Double] = []
            var lookups: [Double] = []
            var loads = 0
            for round in 0..<rounds {
                var persistence: SQLitePersistence?
                var store: Store?
                opens.append(
                    try Bench.time {
                        persistence = try SQLitePersistence(path: path)
                        store = Store(persistence: persistence)
                    })
                let id = Self.id((size / 2 + round * 7919) % size)
                var found = false
                lookups.append(Bench.time { found = store?.record(id: id) != nil })
                guard found else { throw CLIFailure.invalid("\(id) not found in \(path)") }
                loads = store?.persistenceLoads ?? -1
                persistence?.close()
            }
            let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            print(
                "cold open of a \(size)-entity file (\(bytes / 1_000_000) MB): "
                    + "open \(formatted(Bench.median(opens) * 1e3, 2)) ms, "
                    + "one lookup by id \(formatted(Bench.median(lookups) * 1e3, 2)) ms (medians of \(rounds)), "
                    + "records loaded by the lookup: \(loads)")
        }
    }

    static func number(_ value: Double) -> JSONValue {
        guard let v = BenchReport.reported(value), let n = JSONNumber(v) else { return .null }
        return .number(n)
    }

    /// Mean seconds per commit of `commits` pages of 50 users each into one endpoint's list (as
    /// an offline pull commits them), in memory and into a SQLite file; and for SQLite the mean
    /// of the first and of the last tenth of the commits, to show whether a commit's cost grows
    /// with the list.
    static func smallCommits(_ commits: Int, registry: EntityRegistry, directory: String) throws -> (
        memory: Double, sqlite: Double, sqliteFirst: Double, sqliteLast: Double
    ) {
        let pages = (0..<commits).map { page in
            var w = JSONWriter()
            w.beginObject()
            w.key("offset")
            w.number(page * 50)
            w.key("total")
            w.number(commits * 50)
            w.key("data")
            w.beginArray()
            for i in page * 50..<(page + 1) * 50 {
                w.beginObject()
                w.key("uuid")
                w.string("u-page-\(i)")
                w.key("firstname")
                w.string("User \(i)")
                w.key("email")
                w.string("user\(i)@example.com")
                w.endObject()
            }
            w.endArray()
            w.endObject()
            return w.bytes
        }
        func commitAll(_ store: Store) throws -> [Double] {
            try pages.enumerated().map { (page, bytes) in
                try Bench.time { try store.ingest(bytes, endpoint: "/users?offset=\(page * 50)&count=50") }
            }
        }
        let memory = try commitAll(Store(registry: registry))
        let path = directory + "/small-commits.sqlite"
        let persistence = try SQLitePersistence(path: path)
        let sqlite = try commitAll(Store(registry: registry, persistence: persistence))
        persistence.close()
        try SQLitePersistence.removeFiles(atPath: path)
        func mean(_ values: ArraySlice<Double>) -> Double { values.reduce(0, +) / Double(max(values.count, 1)) }
        let tenth = max(1, commits / 10)
        return (mean(memory[...]), mean(sqlite[...]), mean(sqlite.prefix(tenth)), mean(sqlite.suffix(tenth)))
    }

    static func ingest(_ bytes: [UInt8], into store: Store) throws -> Int {
        let ingestor = store.makeIngestor(endpoint: "/bench")
        try forEachChunk(bytes, size: Bench.chunkSize) { try ingestor.feed($0) }
        _ = try store.commit(ingestor.finish())
        return store.count
    }

    /// The CPU time this process has used (all threads).
    static func cpuSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    static func id(_ n: Int) -> String { "x-\(String(n, radix: 36))-\(n)" }

    /// A file of `entities` small untyped entities, written in batches of 50,000.
    static func build(path: String, entities: Int, log: FileHandleOutput) throws {
        let persistence = try SQLitePersistence(path: path)
        let store = Store(persistence: persistence)
        var n = 0
        while n < entities {
            var w = JSONWriter()
            w.beginArray()
            for _ in 0..<min(50_000, entities - n) {
                w.beginObject()
                w.key("uuid")
                w.string(id(n))
                w.key("name")
                w.string("entity \(n)")
                w.key("n")
                w.number(n)
                w.endObject()
                n += 1
            }
            w.endArray()
            try store.ingest(w.bytes)
            if n % 200_000 == 0 { log.write("  \(n)\n") }
        }
        persistence.close()
    }
}
