import Flatland
import FlatlandFixtures
import FlatlandHTTP
import Foundation
import Testing

/// A persistence whose every write fails, as a full disk would.
final class FullDisk: StorePersistence, @unchecked Sendable {
    struct Failure: Error, Equatable { var path: String }
    func write(_ batch: PersistedBatch, alongside work: (any StoreTransactionWork)?) throws(StoreWriteError) {
        throw StoreWriteError(.persistence, "no space left", underlying: Failure(path: "/full"))
    }
}

@Suite("Persistence failures through HTTP")
struct PersistenceErrorTests {
    /// A response read whole but not stored fails its task with the persistence code, not a
    /// decoding one, the persistence's own error reachable; the store is unchanged.
    @Test func aTaskWhoseStoreCannotBeWrittenFailsWithThePersistenceCode() async throws {
        try await withServer { _, environment in
            let store = Store(
                registry: try EntityRegistry([SeedUser.self, SeedDevice.self]), persistence: FullDisk())
            let backend = Backend(environment: environment, store: store)
            let task = backend.launch(.get, "/devices?offset=0&count=2")
            let error = try #require(await failure(of: task))
            #expect(error.code == .persistence)
            #expect(error.status == 200)
            #expect(error.taskID == task.id)
            #expect(error.ingest?.code == .persistence)
            #expect(error.persistenceError as? FullDisk.Failure == FullDisk.Failure(path: "/full"))
            #expect(store.count == 0 && store.collections.isEmpty)
        }
    }
}
