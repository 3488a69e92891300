import Benchmark
import Flatland
import FlatlandFixtures
import FlatlandJSON

/// The generated seed-shaped response every suite measures: the same bytes for the same size.
public func seedDocument(megabytes: Int) -> [UInt8] {
    var generator = SeedGenerator(seed: 2026)
    return generator.document(approximateBytes: megabytes * 1_000_000)
}

/// Calls `body` with consecutive slices of `bytes` of at most `chunkSize` bytes.
public func forEachChunk(
    of bytes: [UInt8], size chunkSize: Int = 64 * 1024, _ body: (ArraySlice<UInt8>) throws -> Void
) rethrows {
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunkSize)
        try body(bytes[offset..<end])
        offset = end
    }
}

/// Parses `bytes` in chunks, as a response arrives.
public func feed(_ bytes: [UInt8], to parser: JSONStreamParser, chunkSize: Int = 64 * 1024) throws {
    try forEachChunk(of: bytes, size: chunkSize) { try parser.feed($0) }
    try parser.finish()
}

/// Ingests `bytes` in chunks into `store`, as a response from a paginated endpoint.
public func ingest(_ bytes: [UInt8], into store: Store, chunkSize: Int = 64 * 1024) throws -> IngestResult {
    let ingestor = store.makeIngestor(endpoint: "/users?offset=0")
    try forEachChunk(of: bytes, size: chunkSize) { try ingestor.feed($0) }
    return try store.commit(ingestor.finish())
}

/// Allocation counts barely move between runs: more than 10% over the committed Thresholds/ is
/// a regression (`swift package benchmark thresholds check`); an allocation per event or per
/// field would show as a multiple.
public func mallocThresholds() -> [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: .init(relative: [.p90: 10.0])]
}
