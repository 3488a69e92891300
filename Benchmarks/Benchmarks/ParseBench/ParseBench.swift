import Benchmark
import BenchmarkSupport
import FlatlandFixtures
import FlatlandJSON


let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        warmupIterations: 1,
        maxDuration: .seconds(3),
        maxIterations: 50,
        thresholds: mallocThresholds()
    )

    let oneMB = seedDocument(megabytes: 1)
    let tenMB = seedDocument(megabytes: 10)

    Benchmark("parse_seed_1MB_(64_KiB_chunks)") { benchmark in
        for _ in benchmark.scaledIterations {
            try feed(oneMB, to: JSONStreamParser(handler: NullEventHandler()))
        }
    }

    Benchmark("parse_seed_10MB_(64_KiB_chunks)") { benchmark in
        for _ in benchmark.scaledIterations {
            try feed(tenMB, to: JSONStreamParser(handler: NullEventHandler()))
        }
    }

    Benchmark("parse_seed_1MB_(1_KiB_chunks)") { benchmark in
        for _ in benchmark.scaledIterations {
            try feed(oneMB, to: JSONStreamParser(handler: NullEventHandler()), chunkSize: 1024)
        }
    }

    Benchmark("JSONValue_seed_1MB") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try JSONValue(parsing: oneMB))
        }
    }

    Benchmark("write_JSONValue_seed_1MB") { benchmark in
        let value = try JSONValue(parsing: oneMB)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(value.jsonBytes)
        }
    }
}
