import Flatland
import Testing

@Suite("Lifetimes")
struct LifetimeTests {
    /// An ingestor owns its parser and the parser owns its handler: the store and the ingestor
    /// must still be freed once nothing else holds them, finished or abandoned mid-stream.
    @Test(arguments: [true, false])
    func storesAndIngestorsAreFreed(finish: Bool) throws {
        weak var weakStore: Store?
        weak var weakIngestor: Ingestor?
        do {
            let store = Store(registry: try seedRegistry())
            let ingestor = store.makeIngestor(endpoint: "/users")
            try ingestor.feed(bytes(#"[{"uuid":"u-1","firstname":"Ada"},"#))
            if finish {
                try ingestor.feed(bytes(#"{"uuid":"u-2"}]"#))
                _ = try store.commit(ingestor.finish())
                #expect(store.count == 2)
            }
            weakStore = store
            weakIngestor = ingestor
        }
        #expect(weakIngestor == nil)
        #expect(weakStore == nil)
    }
}
