import Benchmark
import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandSQLite
import Foundation

/// Persisted ingest against in-memory ingest, and a cold open and lookup of a store file.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 10
    )

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "flatland-persist-bench-\(ProcessInfo.processInfo.processIdentifier)"
    ).path
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    var generator = SeedGenerator(seed: 2026)
    let document = generator.document(approximateBytes: 10_000_000)
    let registry = seedFixtureRegistry()

    Benchmark("ingest seed-10MB in memory") { benchmark in
        for _ in benchmark.scaledIterations {
            let store = Store(registry: registry)
            blackHole(try store.ingest(document))
        }
    }

    Benchmark("ingest seed-10MB into SQLite") { benchmark in
        for _ in benchmark.scaledIterations {
            let path = directory + "/ingest-\(UUID().uuidString).sqlite"
            let persistence = try SQLitePersistence(path: path)
            let store = Store(registry: registry, persistence: persistence)
            benchmark.startMeasurement()
            blackHole(try store.ingest(document))
            benchmark.stopMeasurement()
            try persistence.destroy()
        }
    }

    // A file of 1,000,000 small entities, built once per run.
    let large = directory + "/large.sqlite"
    let entities = 1_000_000
    func id(_ n: Int) -> String { "x-\(String(n, radix: 36))-\(n)" }
    if let persistence = try? SQLitePersistence(path: large) {
        let store = Store(persistence: persistence)
        var n = 0
        while n < entities {
            var w = JSONWriter()
            w.beginArray()
            for _ in 0..<min(50_000, entities - n) {
                w.beginObject()
                w.key("uuid")
                w.string(id(n))
                w.key("n")
                w.number(n)
                w.endObject()
                n += 1
            }
            w.endArray()
            _ = try? store.ingest(w.bytes)
        }
        persistence.close()
    }

    Benchmark("cold open of a 1,000,000-entity file", configuration: .init(maxIterations: 50)) { benchmark in
        for _ in benchmark.scaledIterations {
            let persistence = try SQLitePersistence(path: large)
            blackHole(Store(persistence: persistence))
            benchmark.stopMeasurement()
            persistence.close()
        }
    }

    Benchmark("cold open and one lookup by id, 1,000,000 entities", configuration: .init(maxIterations: 50)) {
        benchmark in
        for i in benchmark.scaledIterations {
            let persistence = try SQLitePersistence(path: large)
            let store = Store(persistence: persistence)
            blackHole(store.record(id: id((i * 7919) % entities)))
            benchmark.stopMeasurement()
            persistence.close()
        }
    }
}
