import Flatland
import FlatlandFixtures
import FlatlandJSON
import Testing

@Suite("Atomicity")
struct AtomicityTests {
    static let base = #"{"offset":0,"total":3,"data":[{"uuid":"u-1","firstname":"A","age":1},{"uuid":"u-2"}]}"#
    static let update =
        #"{"offset":1,"total":5,"data":[{"uuid":"u-2","firstname":"B","devices":[{"uuid":"d-1","name":"n"}]},{"uuid":"u-3","age":3},{"uuid":"u-1","age":99}]}"#

    enum Damage: String, CaseIterable, Sendable {
        case dropLastBrace, trailingGarbage, trailingComma, truncatedString, badLastByte
        func apply(_ text: String) -> [UInt8] {
            var b = bytes(text)
            switch self {
            case .dropLastBrace: b.removeLast()
            case .trailingGarbage: b += bytes(" x")
            case .trailingComma: b.insert(UInt8(ascii: ","), at: b.count - 1)
            case .truncatedString: b = bytes(String(text.dropLast(4)) + "\"")
            case .badLastByte: b[b.count - 1] = 0xFF
            }
            return b
        }
    }

    static func seeded(_ backend: StoreBackend) throws -> Store {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(base), endpoint: "/users?offset=0")
        return store
    }

    @Test(arguments: Damage.allCases, StoreBackend.each([1, 7, 64, Int.max]))
    func aResponseFailingAtTheEndLeavesTheStoreAsItWas(damage: Damage, setup: (StoreBackend, Int)) throws {
        let (backend, chunkSize) = setup
        let store = try Self.seeded(backend)
        let before = fingerprint(store)
        let snapshotBefore = store.snapshot()
        #expect(throws: IngestError.self) {
            try ingestChunked(store, damage.apply(Self.update), chunkSize: chunkSize, endpoint: "/users?offset=1")
        }
        #expect(fingerprint(store) == before)
        #expect(fingerprint(store) == fingerprint(snapshotBefore))
        // The intact response does change it: the test can tell.
        try ingestChunked(store, bytes(Self.update), chunkSize: chunkSize, endpoint: "/users?offset=1")
        #expect(fingerprint(store) != before)
        #expect(store.entity(EntityID<User>("u-1"))?.age == 99)
    }

    @Test(arguments: StoreBackend.allCases, [1, 7, 64, Int.max])
    func chunkSizeDoesNotChangeTheResult(backend: StoreBackend, chunkSize: Int) throws {
        var generator = SeedGenerator(seed: 7)
        let document = generator.document(approximateBytes: 30_000)
        let whole = try backend.store(registry: try seedRegistry())
        try whole.ingest(document, endpoint: "/users?offset=0", taskID: "t")
        let chunked = try backend.store(registry: try seedRegistry())
        let ingestor = chunked.makeIngestor(endpoint: "/users?offset=0", taskID: "t")
        var start = 0
        while start < document.count {
            let end = min(document.count, start + chunkSize)
            try document[start..<end].withUnsafeBytes { try ingestor.feed($0) }
            start = end
        }
        let result = try chunked.commit(ingestor.finish())
        #expect(result.bytes == document.count)
        #expect(whole.count > 10)
        #expect(whole.allIDs() == chunked.allIDs())
        for id in whole.allIDs() {
            #expect(whole.record(id: id)?.fields == chunked.record(id: id)?.fields)
        }
        #expect(
            whole.collections.map { [$0.displayIdentifier] + $0.items.map { $0 ?? "-" } }
                == chunked.collections.map { [$0.displayIdentifier] + $0.items.map { $0 ?? "-" } })
    }

    @Test(arguments: StoreBackend.allCases, [1, 7, 64])
    func cancellationMidStreamLeavesTheStoreUnchanged(backend: StoreBackend, chunkSize: Int) throws {
        let store = try Self.seeded(backend)
        let before = fingerprint(store)
        let document = bytes(Self.update)
        let ingestor = store.makeIngestor(endpoint: "/users?offset=1")
        var start = 0
        while start < document.count / 2 {
            let end = min(document.count, start + chunkSize)
            try ingestor.feed(document[start..<end])
            start = end
        }
        ingestor.cancel()
        let feedError = #expect(throws: IngestError.self) { try ingestor.feed(document[start...]) }
        #expect(feedError?.code == .cancelled)
        let finishError = #expect(throws: IngestError.self) { try ingestor.finish() }
        #expect(finishError?.code == .cancelled)
        #expect(fingerprint(store) == before)
    }

    @Test(arguments: StoreBackend.allCases) func cancelBeforeFinishAppliesNothing(backend: StoreBackend) throws {
        let store = try Self.seeded(backend)
        let before = fingerprint(store)
        let ingestor = store.makeIngestor()
        try ingestor.feed(bytes(Self.update))
        ingestor.cancel()
        #expect(throws: IngestError.self) { try ingestor.finish() }
        #expect(fingerprint(store) == before)
    }

    @Test(arguments: StoreBackend.allCases) func anIngestorFinishesOnce(backend: StoreBackend) throws {
        let store = try backend.store()
        let ingestor = store.makeIngestor()
        try ingestor.feed(bytes(#"{"uuid":"x-1"}"#))
        _ = try store.commit(ingestor.finish())
        let error = #expect(throws: IngestError.self) { try ingestor.finish() }
        #expect(error?.code == .misuse)
        #expect(store.collections.count == 1)
    }

    @Test(arguments: StoreBackend.allCases) func aFailedIngestorKeepsFailing(backend: StoreBackend) throws {
        let store = try backend.store()
        let ingestor = store.makeIngestor()
        #expect(throws: IngestError.self) { try ingestor.feed(bytes(#"{"uuid":"x-1",]"#)) }
        #expect(throws: IngestError.self) { try ingestor.feed(bytes("}")) }
        #expect(throws: IngestError.self) { try ingestor.finish() }
        #expect(store.count == 0)
    }

    @Test(arguments: StoreBackend.allCases) func errorsInvolvingTheParserCarryALocation(backend: StoreBackend) throws {
        let store = try backend.store()
        let error = #expect(throws: IngestError.self) { try store.ingest(bytes("[{\"uuid\":\"x-1\"},\n  nope]")) }
        #expect(error?.code == .json)
        #expect(error?.location?.line == 2)
        #expect(error?.json != nil)
    }
}
