import FlatlandJSON

/// The flat store: one record per id, an index by type, secondary indexes, collections.
///
/// A store is an instance, never a singleton: each `(user, environment)` has its own, and two
/// stores never see each other's data. It is thread-safe; every read sees whole batches only,
/// and ``snapshot()`` gives a view that later writes do not change.
///
/// ```swift
/// let store = Store(registry: try EntityRegistry([User.self, Device.self]))
/// let result = try store.ingest(responseBytes, endpoint: "/users?offset=0&count=20")
/// let me = store.entity(EntityID<User>("u-1"))
/// ```
public final class Store: StoreReader, @unchecked Sendable {
    /// The entity types this store decodes.
    public let registry: EntityRegistry
    /// The hooks run around writes (see <doc:WritingToTheStore> for which writes run which).
    public let hooks: StoreHooks
    /// Where applied batches are written, if anywhere.
    public let persistence: (any StorePersistence)?
    /// How many task collections the store keeps: when an ingest adds one past this, the
    /// oldest go in the same commit. Nil keeps them all.
    public let taskCollectionLimit: Int?

    /// Guards ``contents`` and ``observers``: held by readers, and by a commit only while it
    /// works out or puts in place what it changes, never while the persistence writes.
    let lock = Lock()
    /// Serialises commits: held by a commit from start to end (its persistence transaction,
    /// hooks and notification included), so commits happen, and are announced, one at a time.
    let writer = Lock()
    var contents = StoreContents()
    var observers: [Int: Observer] = [:]
    var nextObserver = 0
    /// The number of the last commit (under ``writer``).
    var lastCommit = 0

    struct Observer {
        var prefix: String?
        var id: String?
        var continuation: AsyncStream<ChangeSet>.Continuation
    }

    /// The persistence the store reads through, when it is lazy.
    let lazy: (any LazyStorePersistence)?

    /// A store for the types in `registry`.
    ///
    /// With no persistence the store keeps everything in memory. With a
    /// ``LazyStorePersistence`` (FlatlandSQLite's `SQLitePersistence`) it is lazy: a record is
    /// loaded on first access into a cache of at most ``LazyStorePersistence/cacheCapacity``
    /// records, and queries (ids, counts, types, secondary indexes, collections) are answered by
    /// the persistence. With a persistence that only writes, the store keeps everything in memory
    /// and writes each batch through.
    ///
    /// - Parameters:
    ///   - registry: the entity types the store decodes; an unknown prefix is stored untyped.
    ///   - hooks: the condition and the before- and after-store hooks.
    ///   - persistence: where records are written (and, when lazy, read from); nil for memory.
    ///   - taskCollectionLimit: how many task collections to keep (the newest; at least 1), or
    ///     nil to keep every one. Default 64.
    public init(
        registry: EntityRegistry = EntityRegistry(), hooks: StoreHooks = StoreHooks(),
        persistence: (any StorePersistence)? = nil, taskCollectionLimit: Int? = 64
    ) {
        self.registry = registry
        self.hooks = hooks
        self.persistence = persistence
        self.taskCollectionLimit = taskCollectionLimit.map { max(1, $0) }
        lazy = persistence as? any LazyStorePersistence
        if let lazy {
            contents.backing = PersistentBacking(source: lazy, registry: registry, cacheCapacity: lazy.cacheCapacity)
        }
    }

    @_spi(StoreInternals)
    public func withContents<R>(_ body: (StoreContents) throws -> R) rethrows -> R {
        try lock.withLock { try body(contents) }
    }

    /// A consistent copy of the store as it is now. For a lazy store it reads a snapshot of the
    /// persistence (if that cannot be made, the persistence as it is, and
    /// ``lastPersistenceError`` says why).
    public func snapshot() -> StoreSnapshot {
        lock.withLock {
            guard let lazy, let backing = contents.backing else { return StoreSnapshot(contents: contents) }
            var copy = StoreContents()
            let source: any StoredRecordSource = backing.attempt { try lazy.makeSnapshot() } ?? lazy
            copy.backing = PersistentBacking(source: source, registry: registry, cacheCapacity: nil)
            return StoreSnapshot(contents: copy)
        }
    }

    // MARK: Persistence

    /// Whether records are loaded lazily from persistence (a ``LazyStorePersistence``).
    public var isLazy: Bool { lazy != nil }

    /// How many records this store has decoded from persistence since it was made (0 for an
    /// in-memory store): what lazy loading is measured by.
    public var persistenceLoads: Int { lock.withLock { contents.backing?.loads ?? 0 } }

    /// How many decoded records a lazy store holds in memory now.
    public var cachedRecordCount: Int { lock.withLock { contents.backing?.cache?.count ?? 0 } }

    /// The last error the persistence gave a read (reads that fail read as absent), if any.
    public var lastPersistenceError: (any Error)? { lock.withLock { contents.backing?.lastError } }

    /// Upgrades every stored record written under an older class version of its type, all at
    /// once, and writes them back in one transaction. (Without this a record is upgraded when it
    /// is loaded.) Returns the number of records upgraded; 0 for an in-memory store, whose records
    /// are always current. A maintenance write: no hook runs and no observer hears of it.
    ///
    /// - Throws: a migration's error, or ``StoreWriteError``; nothing is written then.
    @discardableResult
    public func upgradeRecords() throws -> Int {
        guard let lazy else { return 0 }
        if CommitScope.isCommitting(self) {
            throw StoreWriteError(.writeInsideCommit, "upgradeRecords was called inside a commit to the same store")
        }
        // Read and written under one hold of the writer lock: no commit comes in between.
        return try writer.withLock { () throws -> Int in
            var write = StoreWrite()
            write.kind = .maintenance
            for prefix in registry.prefixes {
                guard let type = registry.type(forPrefix: prefix) else { continue }
                let ids = try lazy.outdatedIDs(prefix: prefix, classVersion: type.classVersion)
                for stored in try lazy.loadRecords(ids: ids) {
                    write.restored.append(try registry.decodeStored(stored))
                }
            }
            guard !write.restored.isEmpty else { return 0 }
            try commitHoldingWriter(&write, alongside: nil, persisting: true)
            return write.restored.count
        }
    }

    // MARK: Writing

    /// Applies `change` as one commit: the records it upserts (merged as ``upsert(_:)`` does,
    /// hooks run), the ids it removes (from the records and every collection), the collections
    /// it removes, and `work` in the same persistence transaction.
    ///
    /// `work` is how a layer above writes its own rows together with a change to the entities
    /// (an operation queue, a delta token): FlatlandSQLite runs an `SQLiteTransactionWork`
    /// inside the transaction that writes the change; if it throws, nothing is written, the
    /// store is unchanged and no observer hears of it. An empty change with work runs the work
    /// alone. See <doc:WritingToTheStore>.
    ///
    /// - Returns: what changed, numbered by ``ChangeSet/commit``.
    /// - Throws: ``StoreWriteError`` (`unsupportedWork` when the store has no persistence, or its
    ///   persistence does not run this kind of work), or ``RegistryError`` when an upserted
    ///   entity's type is not registered; the store is then as it was.
    @discardableResult
    public func commit(_ change: StoreChange, alongside work: (any StoreTransactionWork)? = nil) throws -> ChangeSet {
        var write = StoreWrite()
        for upsert in change.upserts { write.batch.insert(try upsert.make(registry)) }
        write.removed = change.removed
        write.removedCollections = change.removedCollections
        return try commit(&write, alongside: work).changes
    }

    /// Inserts or replaces an entity; every declared field counts as present. (Not a response:
    /// it makes no task collection.)
    @discardableResult
    public func upsert<E: Entity>(_ entity: E) throws -> ChangeSet {
        var write = StoreWrite()
        write.batch.insert(try registry.box(for: entity))
        return try commit(&write, alongside: nil).changes
    }

    /// Removes records by id, and the ids from every collection they are in (later items move
    /// up one position; a known total goes down by one per item removed), in one commit.
    @discardableResult
    public func remove(_ ids: [String]) throws(StoreWriteError) -> ChangeSet {
        var write = StoreWrite()
        write.removed = ids
        return try commit(&write, alongside: nil).changes
    }

    /// Removes one entity (and its id from every collection).
    @discardableResult
    public func remove<E: Entity>(_ id: EntityID<E>) throws(StoreWriteError) -> ChangeSet {
        try remove([id.rawValue])
    }

    /// Removes everything, records and collections, in one commit (one persistence transaction):
    /// a logout. Observers hear of every record removed.
    public func removeAll() throws(StoreWriteError) {
        var write = StoreWrite()
        write.removesEverything = true
        try commit(&write, alongside: nil)
    }

    /// Removes the collection with this id, if there is one (its entities stay).
    public func removeCollection(id: String) throws(StoreWriteError) {
        var write = StoreWrite()
        write.removedCollections = [id]
        try commit(&write, alongside: nil)
    }

    /// Puts back a record read from persistence, as it was written: its fields as JSON (as
    /// ``EntityRecord/fields`` gives them), the class version it was written under and its data
    /// version. A typed record written under an older class version is first upgraded by its
    /// type's ``Entity/migrate(_:from:)``; a prefix with no registered type gives an untyped
    /// record. Restoring replaces any record with that id, and, a maintenance write, does not run
    /// hooks or notify observers: it is how a persistence layer that only writes loads what it
    /// stored. (A lazy store loads by itself; restoring into one writes the record through to its
    /// persistence.)
    ///
    /// - Throws: the migration's error, ``FieldError`` when a stored field cannot be decoded, or
    ///   ``StoreWriteError``; the store is then unchanged.
    @discardableResult
    public func restore(
        id: String, prefix: String, fields: JSONObject, classVersion: Int, dataVersion: Double?
    ) throws -> EntityRecord {
        let box = try registry.decodeStored(
            id: id, prefix: prefix, fields: fields, classVersion: classVersion, dataVersion: dataVersion)
        var write = StoreWrite()
        write.kind = .maintenance
        write.restored = [box]
        // A persistence that only writes is being loaded from: writing the record back is not needed.
        try commit(&write, alongside: nil, persisting: lazy != nil)
        return EntityRecord(box)
    }

    // MARK: Ingesting

    /// Whether this is an in-memory store with no records (yet).
    var isEmptyInMemory: Bool {
        persistence == nil && lock.withLock { contents.backing == nil && contents.records.isEmpty }
    }

    func currentVersion(of id: String) -> Double? { lock.withLock { contents.box(id)?.dataVersion } }

    /// Applies a batch atomically: every record and collection, or (if persistence fails) none.
    ///
    /// - Throws: ``StoreWriteError``.
    func apply(_ batch: inout PendingBatch, taskID: String?, endpoint: String?) throws -> IngestResult {
        try apply(&batch, ingest: (taskID, endpoint, true), removing: [], alongside: nil)
    }

    /// Applies a batch atomically, with the removal of `removing` and `work` in the same
    /// persistence transaction.
    func apply(
        _ batch: inout PendingBatch, ingest: StoreWrite.Ingest, removing: [String],
        alongside work: (any StoreTransactionWork)?
    ) throws(StoreWriteError) -> IngestResult {
        var write = StoreWrite()
        swap(&write.batch, &batch)
        write.ingest = ingest
        write.removed = removing
        let result = try commit(&write, alongside: work)
        return IngestResult(
            taskCollection: result.taskCollection!, endpointCollection: result.endpointCollection,
            changes: result.changes, skipped: [], bytes: 0)
    }

    // MARK: Observation

    /// The change sets of every later write, optionally only those touching records with this
    /// prefix or this id, in the order the writes were committed (``ChangeSet/commit`` grows
    /// along the sequence, also with writers on several threads). The sequence ends when the
    /// consumer stops iterating.
    public func changes(prefix: String? = nil, id: String? = nil) -> AsyncStream<ChangeSet> {
        let (stream, continuation) = AsyncStream<ChangeSet>.makeStream(bufferingPolicy: .unbounded)
        let key = lock.withLock {
            nextObserver += 1
            observers[nextObserver] = Observer(prefix: prefix, id: id, continuation: continuation)
            return nextObserver
        }
        continuation.onTermination = { [weak self] _ in
            self?.lock.withLock { _ = self?.observers.removeValue(forKey: key) }
        }
        return stream
    }

    /// The change sets of every later write touching entities of `E`.
    public func changes<E: Entity>(of type: E.Type) -> AsyncStream<ChangeSet> { changes(prefix: E.prefix) }

    /// Hands `changes` to every observer. Called under ``writer``, so observers get change sets
    /// in commit order.
    func notify(_ changes: ChangeSet) {
        guard !changes.isEmpty else { return }
        let current = lock.withLock { Array(observers.values) }
        for observer in current {
            let filtered =
                observer.prefix == nil && observer.id == nil
                ? changes : changes.filtered(prefix: observer.prefix, id: observer.id)
            if !filtered.isEmpty { observer.continuation.yield(filtered) }
        }
    }
}

/// A new random id with this prefix.
func newID(prefix: String) -> String { EntityIDFormat.generate(prefix: prefix) }
