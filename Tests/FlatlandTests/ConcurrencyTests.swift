import Flatland
import FlatlandJSON
import Testing

@Suite("Concurrency")
struct ConcurrencyTests {
    static let itemsPerBatch = 8
    static let batches = 150

    /// Batch `k`: a counter entity at `k` and `itemsPerBatch` entities of that batch, each
    /// referring to the next (the last to the counter), so a half-applied batch shows.
    static func batch(_ k: Int) -> [UInt8] {
        var items: [String] = []
        for i in 0..<itemsPerBatch {
            let next = i + 1 < itemsPerBatch ? "it-\(k)-\(i + 1)" : "cn-counter"
            items.append(#"{"uuid":"it-\#(k)-\#(i)","batch":\#(k),"next":"\#(next)"}"#)
        }
        return bytes(#"{"uuid":"cn-counter","n":\#(k),"items":[\#(items.joined(separator: ","))]}"#)
    }

    /// Checks one consistent view; returns the batch it shows.
    static func check(_ reader: some StoreReader) -> Int? {
        guard let counter = reader.record(id: "cn-counter") else {
            #expect(reader.count(prefix: "it") == 0)
            return nil
        }
        let n = Int(counter.fields["n"]?.numberValue?.description ?? "") ?? -1
        #expect(reader.count(prefix: "it") == (n + 1) * itemsPerBatch)
        let items = counter.fields["items"]
        for i in 0..<itemsPerBatch {
            #expect(items?[i] == ["$ref": .string("it-\(n)-\(i)")])
            #expect(reader.record(id: "it-\(n)-\(i)")?.fields["batch"] == .number(JSONNumber(n)))
        }
        return n
    }

    @Test(arguments: StoreBackend.allCases) func readersSeeWholeBatchesOnly(backend: StoreBackend) async throws {
        let store = try backend.store()
        let done = Box(false)
        let seen = Box<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for k in 0..<Self.batches {
                    try store.ingest(Self.batch(k), endpoint: "/counter?offset=\(k)")
                    if k % 10 == 0 { await Task.yield() }
                }
                done.withValue { $0 = true }
            }
            for _ in 0..<3 {
                group.addTask {
                    var last = -1
                    var rounds = 0
                    while !done.current || rounds < 5 {
                        rounds += 1
                        let snapshot = store.snapshot()
                        let n = Self.check(snapshot) ?? -1
                        // Snapshots never go back in time.
                        #expect(n >= last)
                        last = n
                        // A snapshot taken, then read again after more writes, is unchanged.
                        #expect(Self.check(snapshot) ?? -1 == n)
                        seen.withValue { $0.append(n) }
                        await Task.yield()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(Self.check(store) == Self.batches - 1)
        #expect(store.collection(displayIdentifier: "/counter")?.items.count == 1)
        // The newest task collections, up to the store's limit.
        #expect(store.collections(kind: .task).count == min(Self.batches, 64))
        #expect(seen.current.count >= 15)
    }

    @Test(arguments: StoreBackend.allCases) func concurrentIngestsIntoOneStore(backend: StoreBackend) async throws {
        let store = try backend.store(registry: try seedRegistry())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<4 {
                group.addTask {
                    for k in 0..<50 {
                        try store.ingest(
                            bytes(#"[{"uuid":"u-\#(w)-\#(k)","age":\#(k)},{"uuid":"u-shared","age":\#(k)}]"#))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(store.count(prefix: "u") == 201)
        #expect(store.collections(kind: .task).count == 64)  // the store's limit
    }
}
