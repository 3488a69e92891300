import Benchmark
import Flatland
import FlatlandFixtures

func seedDocument(megabytes: Int) -> [UInt8] {
    var generator = SeedGenerator(seed: 2026)
    return generator.document(approximateBytes: megabytes * 1_000_000)
}

func ingest(_ bytes: [UInt8], into store: Store, chunkSize: Int = 64 * 1024) throws -> IngestResult {
    let ingestor = store.makeIngestor(endpoint: "/users?offset=0")
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunkSize)
        try ingestor.feed(bytes[offset..<end])
        offset = end
    }
    return try ingestor.finish()
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        warmupIterations: 1,
        maxDuration: .seconds(3),
        maxIterations: 30
    )

    let oneMB = seedDocument(megabytes: 1)
    let tenMB = seedDocument(megabytes: 10)

    Benchmark("ingest seed 1MB into a new store") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(oneMB, into: Store(registry: seedFixtureRegistry())))
        }
    }

    Benchmark("ingest seed 10MB into a new store") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(tenMB, into: Store(registry: seedFixtureRegistry())))
        }
    }

    Benchmark("ingest seed 1MB again (partial updates of existing records)") { benchmark in
        let store = Store(registry: seedFixtureRegistry())
        _ = try ingest(oneMB, into: store)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(oneMB, into: store))
        }
    }

    Benchmark("ingest seed 10MB, keeping nothing (streaming memory)") { benchmark in
        let store = Store(registry: seedFixtureRegistry(), hooks: StoreHooks(condition: { _ in false }))
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(tenMB, into: store))
        }
    }

    Benchmark("ingest seed 1MB untyped") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(oneMB, into: Store()))
        }
    }
}
