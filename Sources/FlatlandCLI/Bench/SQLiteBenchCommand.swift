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
        print("seed-\(seedSize)MB: \(count) entities, \(workload.bytes.count) bytes")
        print(
            "  in-memory ingest: \(formatted(memoryRate / 1e3, 1))k entities/s (\(formatted(Bench.median(memory), 3)) s)"
        )
        print(
            "  SQLite ingest:    \(formatted(persistedRate / 1e3, 1))k entities/s (\(formatted(Bench.median(persisted), 3)) s)"
        )
        print("  ratio SQLite/in-memory: \(formatted(persistedRate / memoryRate, 2))")
        print(
            "  SQLite ingest CPU time \(formatted(Bench.median(persistedCPU), 3)) s; ingest then close "
                + "(every checkpoint done): \(formatted(Double(count) / Bench.median(withClose) / 1e3, 1))k entities/s, "
                + "ratio \(formatted(Double(count) / Bench.median(withClose) / memoryRate, 2))")

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
