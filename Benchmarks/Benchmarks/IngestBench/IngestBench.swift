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

/// Allocation counts barely move between runs: more than 10% over the committed Thresholds/ is
/// a regression (`swift package benchmark thresholds check`); an allocation per event or per
/// field would show as a multiple.
nonisolated(unsafe) let mallocThresholds: [BenchmarkMetric: BenchmarkThresholds] = [
    .mallocCountTotal: .init(relative: [.p90: 10.0])
]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        warmupIterations: 1,
        maxDuration: .seconds(3),
        maxIterations: 30,
        thresholds: mallocThresholds
    )

    let oneMB = seedDocument(megabytes: 1)
    let tenMB = seedDocument(megabytes: 10)

    Benchmark("ingest_seed_1MB_into_a_new_store") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(oneMB, into: Store(registry: seedFixtureRegistry())))
        }
    }

    Benchmark("ingest_seed_10MB_into_a_new_store") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(tenMB, into: Store(registry: seedFixtureRegistry())))
        }
    }

    Benchmark("ingest_seed_1MB_again_(partial_updates_of_existing_records)") { benchmark in
        let store = Store(registry: seedFixtureRegistry())
        _ = try ingest(oneMB, into: store)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(oneMB, into: store))
        }
    }

    Benchmark("ingest_seed_10MB,_keeping_nothing_(streaming_memory)") { benchmark in
        let store = Store(registry: seedFixtureRegistry(), hooks: StoreHooks(condition: { _ in false }))
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(tenMB, into: store))
        }
    }

    Benchmark("ingest_seed_1MB_untyped") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ingest(oneMB, into: Store()))
        }
    }
}
