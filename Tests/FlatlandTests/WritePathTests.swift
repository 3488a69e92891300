import Flatland
import FlatlandJSON
import Foundation
import Testing

/// A persistence that only writes: it records each batch it is given (one call, one
/// transaction), or fails every write with `failure`.
final class RecordingPersistence: StorePersistence, @unchecked Sendable {
    struct Failure: Error, Equatable { var reason: String }
    private let lock = NSLock()
    private var recorded: [PersistedBatch] = []
    private var failing: Failure?

    init(failing failure: Failure? = nil) { failing = failure }

    var batches: [PersistedBatch] { lock.withLock { recorded } }

    /// The failure every write throws, if any.
    var failure: Failure? {
        get { lock.withLock { failing } }
        set { lock.withLock { failing = newValue } }
    }

    func write(_ batch: PersistedBatch, alongside work: (any StoreTransactionWork)?) throws(StoreWriteError) {
        if let failure { throw StoreWriteError(.persistence, "the disk is full", underlying: failure) }
        if let work { throw StoreWriteError(.unsupportedWork, "no work here: \(type(of: work))") }
        lock.withLock { recorded.append(batch) }
    }
}

/// Work no persistence runs.
struct NoWork: StoreTransactionWork {}

/// Every write goes through one commit: numbered, one transaction, hooks and notification in
/// commit order.
@Suite("The write path")
struct WritePathTests {
    /// Many writers on several threads: observers get every change set, in the order of the
    /// commits' numbers, and the numbers are those the writers got back.
    @Test(arguments: StoreBackend.allCases) func concurrentWritersAreObservedInCommitOrder(backend: StoreBackend)
        async throws
    {
        let store = try backend.store(registry: try seedRegistry())
        let writers = 4
        let perWriter = 40
        var observed = store.changes().makeAsyncIterator()
        var users = store.changes(prefix: "u").makeAsyncIterator()
        let returned = Box<[Int]>([])
        let failures = Box<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            for i in 0..<perWriter {
                do {
                    let changes: ChangeSet
                    if i % 2 == 0 {
                        changes = try store.upsert(User(id: EntityID("u-\(writer)-\(i)")))
                    } else {
                        changes = try store.ingest(bytes(#"{"uuid":"d-\#(writer)-\#(i)","name":"n"}"#)).changes
                    }
                    returned.withValue { $0.append(changes.commit) }
                } catch {
                    failures.withValue { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.current.isEmpty)
        var numbers: [Int] = []
        var userNumbers: [Int] = []
        for _ in 0..<writers * perWriter { numbers.append(try #require(await observed.next()).commit) }
        for _ in 0..<writers * perWriter / 2 {
            let changes = try #require(await users.next())
            #expect(changes.inserted.allSatisfy { $0.hasPrefix("u-") })
            userNumbers.append(changes.commit)
        }
        #expect(numbers == returned.current.sorted())
        #expect(numbers == Array(1...writers * perWriter))
        #expect(userNumbers == userNumbers.sorted())
        #expect(store.count == writers * perWriter)
    }

    /// A logout removes every record and every collection in one transaction, announced as one
    /// change set.
    @Test func removeAllIsOneTransaction() async throws {
        let persistence = RecordingPersistence()
        let store = Store(registry: try seedRegistry(), persistence: persistence)
        try store.ingest(bytes(#"{"data":[{"uuid":"u-1"},{"uuid":"u-2"}],"offset":0,"total":2}"#), endpoint: "/users")
        try store.upsert(Device(id: EntityID("d-1")))
        var observed = store.changes().makeAsyncIterator()
        let before = persistence.batches.count

        try store.removeAll()

        #expect(persistence.batches.count == before + 1)
        let batch = try #require(persistence.batches.last)
        #expect(Set(batch.removed) == ["u-1", "u-2", "d-1"])
        #expect(batch.removedCollections.count == 2)  // the ingest's task collection and the endpoint's
        #expect(store.count == 0 && store.collections.isEmpty)
        #expect(Set(try #require(await observed.next()).removed) == ["u-1", "u-2", "d-1"])
    }

    @Test(arguments: StoreBackend.allCases) func removeAllEmptiesTheStore(backend: StoreBackend) async throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"[{"uuid":"u-1"},{"uuid":"x-1"}]"#), endpoint: "/mixed")
        var observed = store.changes().makeAsyncIterator()
        try store.removeAll()
        #expect(try #require(await observed.next()).removed == ["u-1", "x-1"])
        #expect(store.count == 0)
        #expect(store.allIDs().isEmpty)
        #expect(store.collections.isEmpty)
        #expect(store.record(id: "u-1") == nil)
        // The store takes new writes afterwards.
        try store.ingest(bytes(#"{"uuid":"u-2"}"#), endpoint: "/me")
        #expect(store.allIDs() == ["u-2"])
        #expect(store.collection(displayIdentifier: "/me")?.knownItems == ["u-2"])
    }

    /// Which hooks run for which writes: `beforeStore` and `afterStore` for writes of new data
    /// (ingest, upsert, commit), none for removals and for maintenance writes (restore).
    @Test func hooksRunForDataWritesOnly() throws {
        let before = Box<[String]>([])
        let after = Box<[String]>([])
        let hooks = StoreHooks(
            beforeStore: { entity in before.withValue { $0.append(entity.id) } },
            afterStore: { record in after.withValue { $0.append(record.id) } })
        let store = Store(registry: try seedRegistry(), hooks: hooks)
        try store.ingest(bytes(#"{"uuid":"u-1"}"#))
        try store.upsert(User(id: EntityID("u-2")))
        var change = StoreChange()
        change.upsert(User(id: EntityID("u-3")))
        try store.commit(change)
        try store.restore(id: "u-4", prefix: "u", fields: [:], classVersion: 1, dataVersion: nil)
        try store.remove(["u-1"])
        try store.removeAll()
        #expect(before.current == ["u-1", "u-2", "u-3"])
        #expect(after.current == ["u-1", "u-2", "u-3"])
    }

    /// A hook that writes to its own store fails with a typed error instead of waiting for
    /// itself forever.
    @Test func aHookWritingToItsStoreFails() throws {
        let store = Box<Store?>(nil)
        let errors = Box<[StoreWriteError.Code]>([])
        let hooks = StoreHooks(afterStore: { record in
            guard record.id == "u-1" else { return }
            do { try store.current?.remove(["u-1"]) } catch let error as StoreWriteError {
                errors.withValue { $0.append(error.code) }
            } catch {
                Issue.record("unexpected \(error)")
            }
        })
        store.withValue { $0 = Store(registry: try! seedRegistry(), hooks: hooks) }
        let target = try #require(store.current)
        try target.upsert(User(id: EntityID("u-1")))
        #expect(errors.current == [.writeInsideCommit])
        #expect(target.contains("u-1"))
        store.withValue { $0 = nil }
    }

    /// An in-memory store has no transaction: work alongside a change is refused, and the change
    /// is not applied.
    @Test func anInMemoryStoreRefusesWork() throws {
        let store = Store(registry: try seedRegistry())
        var change = StoreChange()
        change.upsert(User(id: EntityID("u-1")))
        let error = #expect(throws: StoreWriteError.self) { try store.commit(change, alongside: NoWork()) }
        #expect(error?.code == .unsupportedWork)
        #expect(store.count == 0)
        // A persistence that runs no work refuses it too.
        let writing = Store(registry: try seedRegistry(), persistence: RecordingPersistence())
        let refused = #expect(throws: StoreWriteError.self) { try writing.commit(change, alongside: NoWork()) }
        #expect(refused?.code == .unsupportedWork)
        #expect(writing.count == 0)
    }

    /// A failing persistence: the ingest fails with the persistence code, the persistence's
    /// own error reachable, and nothing changes or is announced.
    @Test func aFailingPersistenceGivesATypedError() async throws {
        let failure = RecordingPersistence.Failure(reason: "disk full")
        let persistence = RecordingPersistence(failing: failure)
        let store = Store(registry: try seedRegistry(), persistence: persistence)
        var observed = store.changes().makeAsyncIterator()
        let error = #expect(throws: IngestError.self) {
            try store.ingest(bytes(#"{"uuid":"u-1","firstname":"A"}"#), endpoint: "/me")
        }
        #expect(error?.code == .persistence)
        #expect(error?.underlying as? RecordingPersistence.Failure == failure)
        #expect(store.count == 0 && store.collections.isEmpty)
        // Chunked, through an ingestor, the same.
        let ingestor = store.makeIngestor(endpoint: "/me")
        try ingestor.feed(bytes(#"{"uuid":"u-1","#))
        try ingestor.feed(bytes(#""firstname":"A"}"#))
        let batch = try ingestor.finish()  // reads the response, writes nothing
        let finished = #expect(throws: IngestError.self) { try store.commit(batch) }
        #expect(finished?.code == .persistence)
        // Other writes give the store's own error.
        let upsert = #expect(throws: StoreWriteError.self) { try store.upsert(User(id: EntityID("u-2"))) }
        #expect(upsert?.code == .persistence)
        #expect(upsert?.underlying as? RecordingPersistence.Failure == failure)
        #expect(store.count == 0)
        // Nothing was announced: the first change set the observer gets is the next write's.
        persistence.failure = nil
        try store.upsert(User(id: EntityID("u-9")))
        #expect(try #require(await observed.next()).inserted == ["u-9"])
        #expect(store.allIDs() == ["u-9"])
    }

    /// `StoreChange`: upserts, removals and collection removals in one commit; the last word on
    /// an id wins.
    @Test(arguments: StoreBackend.allCases) func aChangeIsOneCommit(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let task = try store.ingest(bytes(#"[{"uuid":"u-1"},{"uuid":"u-2"}]"#), endpoint: "/users").taskCollection
        var change = StoreChange()
        #expect(change.isEmpty)
        change.upsert(User(id: EntityID("u-3")))
        change.remove(EntityID<User>("u-1"))
        change.remove("u-3")  // the removal wins over the upsert before it
        change.upsert(User(id: EntityID("u-4")))
        change.removeCollection(id: task.id)
        #expect(!change.isEmpty)
        let changes = try store.commit(change)
        #expect(changes.inserted == ["u-4"])
        #expect(changes.removed == ["u-1"])
        #expect(store.allIDs() == ["u-2", "u-4"])
        #expect(store.collection(id: task.id) == nil)
        #expect(store.collection(displayIdentifier: "/users")?.items == ["u-2"])
        // An unregistered type is refused, and nothing of the change is applied.
        var bad = StoreChange()
        bad.remove("u-2")
        bad.upsert(Unregistered(id: EntityID("zz-1")))
        #expect(throws: RegistryError.self) { try store.commit(bad) }
        #expect(store.allIDs() == ["u-2", "u-4"])
    }

    /// A removed id leaves every collection: later items move up, a known total goes down.
    @Test(arguments: StoreBackend.allCases) func removalRemovesFromCollections(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let page = try store.ingest(
            bytes(#"{"offset":0,"count":3,"total":10,"data":[{"uuid":"u-1"},{"uuid":"u-2"},{"uuid":"u-3"}]}"#),
            endpoint: "/users?offset=0&count=3", taskID: "t-page")
        try store.ingest(bytes(#"[{"uuid":"u-2"},{"uuid":"d-1"}]"#), taskID: "t-other")
        let changes = try store.remove(["u-2", "u-404"])
        #expect(changes.removed == ["u-2"])
        let endpointID = try #require(page.endpointCollection).id
        let endpoint = try #require(store.collection(id: endpointID))
        #expect(endpoint.items == ["u-1", "u-3"])
        #expect(endpoint.total == 9)
        #expect(store.collection(displayIdentifier: "t-page")?.items == ["u-1", "u-3"])
        #expect(store.collection(displayIdentifier: "t-page")?.total == 2)
        #expect(store.collection(displayIdentifier: "t-other")?.items == ["d-1"])
        #expect(store.collection(displayIdentifier: "t-other")?.total == 1)
    }

    /// Task collections past the store's limit go, oldest first, in the commit that adds a new
    /// one; endpoint collections stay.
    @Test(arguments: StoreBackend.allCases) func taskCollectionsAreKeptUpToTheLimit(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry(), taskCollectionLimit: 3)
        #expect(store.taskCollectionLimit == 3)
        for k in 0..<5 {
            try store.ingest(bytes(#"{"uuid":"u-\#(k)"}"#), endpoint: "/u/\(k)", taskID: "t-\(k)")
        }
        #expect(store.collections(kind: .task).map(\.displayIdentifier) == ["t-2", "t-3", "t-4"])
        #expect(store.collections(kind: .endpoint).count == 5)
        #expect(store.collection(displayIdentifier: "t-0") == nil)
        #expect(store.count == 5)  // the entities stay
        // Dropping one by hand leaves room: the next ingest drops none.
        try store.removeCollection(id: try #require(store.collection(displayIdentifier: "t-3")).id)
        try store.ingest(bytes(#"{"uuid":"u-5"}"#), taskID: "t-5")
        #expect(store.collections(kind: .task).map(\.displayIdentifier) == ["t-2", "t-4", "t-5"])
    }

    /// A response whose task collection the store does not keep (an offline sync's pages): the
    /// result still carries it, the store neither lists nor writes it, and it pushes none of the
    /// kept ones out; its endpoint collection and entities are kept as usual.
    @Test(arguments: StoreBackend.allCases) func aTaskCollectionNotKeptIsOnlyInTheResult(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry(), taskCollectionLimit: 2)
        try store.ingest(bytes(#"{"uuid":"u-0"}"#), taskID: "t-0")
        try store.ingest(bytes(#"{"uuid":"u-1"}"#), taskID: "t-1")
        var options = IngestOptions()
        options.keepsTaskCollection = false
        for k in 2..<6 {
            let result = try store.ingest(
                bytes(#"[{"uuid":"u-\#(k)"},{"uuid":"u-\#(k)0"}]"#), endpoint: "/u", taskID: "t-\(k)", options: options)
            #expect(result.taskCollection.items == ["u-\(k)", "u-\(k)0"])
            #expect(result.taskCollection.displayIdentifier == "t-\(k)")
            #expect(store.collection(id: result.taskCollection.id) == nil)
            #expect(store.collection(displayIdentifier: "t-\(k)") == nil)
        }
        #expect(store.collections(kind: .task).map(\.displayIdentifier) == ["t-0", "t-1"])
        #expect(store.collection(displayIdentifier: "/u")?.items == ["u-5", "u-50"])
        #expect(store.count == 10)
        // The next kept one counts only the kept ones against the limit.
        try store.ingest(bytes(#"{"uuid":"u-9"}"#), taskID: "t-9")
        #expect(store.collections(kind: .task).map(\.displayIdentifier) == ["t-1", "t-9"])
    }

    @Test func theDefaultLimitIs64() throws {
        let store = Store(registry: try seedRegistry())
        #expect(store.taskCollectionLimit == 64)
        for k in 0..<70 { try store.ingest(bytes(#"{"uuid":"u-\#(k)"}"#), taskID: "t-\(k)") }
        #expect(store.collections(kind: .task).map(\.displayIdentifier) == (6..<70).map { "t-\($0)" })
        let unlimited = Store(registry: try seedRegistry(), taskCollectionLimit: nil)
        for k in 0..<70 { try unlimited.ingest(bytes(#"{"uuid":"u-\#(k)"}"#)) }
        #expect(unlimited.collections(kind: .task).count == 70)
    }

    @Test(arguments: StoreBackend.allCases) func removingACollection(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let result = try store.ingest(bytes(#"[{"uuid":"u-1"}]"#), endpoint: "/users", taskID: "t-1")
        let endpoint = try #require(result.endpointCollection)
        try store.removeCollection(id: endpoint.id)
        #expect(store.collection(id: endpoint.id) == nil)
        #expect(store.collection(displayIdentifier: "/users") == nil)
        #expect(store.collection(displayIdentifier: "t-1")?.items == ["u-1"])
        #expect(store.contains("u-1"))
        try store.removeCollection(id: "c-unknown")  // nothing to remove: no error
        // The endpoint's next response starts a new collection.
        let next = try store.ingest(bytes(#"[{"uuid":"u-2"}]"#), endpoint: "/users")
        #expect(next.endpointCollection?.id != endpoint.id)
        #expect(store.collection(displayIdentifier: "/users")?.items == ["u-2"])
    }

    /// A lookup on a property with no declared index is a typed error, not a trap.
    @Test(arguments: StoreBackend.allCases) func anUndeclaredIndexIsATypedError(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.upsert(User(id: EntityID("u-1")))
        let error = #expect(throws: StoreQueryError.self) { try store.entities(where: \User.firstname, equals: "") }
        #expect(error?.code == .undeclaredIndex)
        #expect(error?.message.contains("User") == true)
        #expect(try store.snapshot().entities(where: \User.email, equals: nil).count == 1)
    }
}

/// A type no test registers.
struct Unregistered: Entity {
    static let prefix = "zz"
    var id: EntityID<Unregistered>
    init(id: EntityID<Unregistered>) { self.id = id }
    static let fields: [Field<Unregistered>] = []
}
