import Benchmark
import BenchmarkSupport
import Flatland
import FlatlandFixtures

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        warmupIterations: 1,
        maxDuration: .seconds(3),
        maxIterations: 30,
        thresholds: mallocThresholds()
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
