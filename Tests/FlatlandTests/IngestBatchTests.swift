import Flatland
import FlatlandJSON
import Testing

/// The ingestor reads; the store writes: `finish()` hands back a batch, `commit(_:)` applies it.
@Suite("Ingest batches")
struct IngestBatchTests {
    @Test(arguments: StoreBackend.allCases) func nothingIsWrittenUntilTheBatchIsCommitted(backend: StoreBackend) throws
    {
        let store = try backend.store(registry: try seedRegistry())
        let ingestor = store.makeIngestor(endpoint: "/users?offset=0", taskID: "t-1")
        try ingestor.feed(bytes(#"{"offset":0,"total":3,"data":[{"uuid":"u-1","age":3},{"uuid":"u-2"}]}"#))
        let batch = try ingestor.finish()
        #expect(batch.entityCount == 2)
        #expect(batch.endpoint == "/users")
        #expect(batch.taskID == "t-1")
        #expect(batch.page == IngestResult.Page(offset: 0, count: 2, total: 3, nextLink: nil))
        #expect(store.count == 0)
        #expect(store.collections.isEmpty)
        let result = try store.commit(batch)
        #expect(result.changes.inserted == ["u-1", "u-2"])
        #expect(result.bytes == batch.bytes)
        #expect(result.page == batch.page)
        #expect(store.entity(EntityID<User>("u-1"))?.age == 3)
        #expect(store.collection(endpoint: "/users")?.items == ["u-1", "u-2"])
        #expect(store.collection(displayIdentifier: "t-1")?.items == ["u-1", "u-2"])
    }

    @Test func aBatchIsCommittedOnceAndOnlyToAStoreOfItsRegistry() throws {
        let registry = try seedRegistry()
        let store = Store(registry: registry)
        let ingestor = store.makeIngestor()
        try ingestor.feed(bytes(#"[{"uuid":"u-1"}]"#))
        let batch = try ingestor.finish()

        let other = Store(registry: try seedRegistry())
        let foreign = #expect(throws: IngestError.self) { try other.commit(batch) }
        #expect(foreign?.code == .misuse)
        #expect(other.count == 0)

        // A store sharing the registry value may take it.
        let sibling = Store(registry: registry)
        try sibling.commit(batch)
        #expect(sibling.contains("u-1"))
        let twice = #expect(throws: IngestError.self) { try store.commit(batch) }
        #expect(twice?.code == .misuse)
        #expect(store.count == 0)
    }
}
