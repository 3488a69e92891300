import Benchmark
import FlatlandFixtures
import FlatlandJSON

/// A handler that does nothing: the cost of parsing alone.
final class NullHandler: JSONEventHandler {
    func beginObject() {}
    func endObject() {}
    func beginArray() {}
    func endArray() {}
    func key(_ key: JSONBytes) {}
    func string(_ value: JSONBytes) {}
    func number(_ value: JSONNumberText) {}
    func bool(_ value: Bool) {}
    func null() {}
}

func seedDocument(megabytes: Int) -> [UInt8] {
    var generator = SeedGenerator(seed: 2026)
    return generator.document(approximateBytes: megabytes * 1_000_000)
}

func feed(_ bytes: [UInt8], to parser: JSONStreamParser, chunkSize: Int = 64 * 1024) throws {
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunkSize)
        try parser.feed(bytes[offset..<end])
        offset = end
    }
    try parser.finish()
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
        maxIterations: 50,
        thresholds: mallocThresholds
    )

    let oneMB = seedDocument(megabytes: 1)
    let tenMB = seedDocument(megabytes: 10)

    Benchmark("parse_seed_1MB_(64_KiB_chunks)") { benchmark in
        for _ in benchmark.scaledIterations {
            try feed(oneMB, to: JSONStreamParser(handler: NullHandler()))
        }
    }

    Benchmark("parse_seed_10MB_(64_KiB_chunks)") { benchmark in
        for _ in benchmark.scaledIterations {
            try feed(tenMB, to: JSONStreamParser(handler: NullHandler()))
        }
    }

    Benchmark("parse_seed_1MB_(1_KiB_chunks)") { benchmark in
        for _ in benchmark.scaledIterations {
            try feed(oneMB, to: JSONStreamParser(handler: NullHandler()), chunkSize: 1024)
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
