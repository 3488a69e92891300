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
    /// The hooks run around writes.
    public let hooks: StoreHooks
    /// Where applied batches are written, if anywhere.
    public let persistence: (any StorePersistence)?

    private let lock = Lock()
    private var contents = StoreContents()
    private var observers: [Int: Observer] = [:]
    private var nextObserver = 0

    private struct Observer {
        var prefix: String?
        var id: String?
        var continuation: AsyncStream<ChangeSet>.Continuation
    }

    /// The persistence the store reads through, when it is lazy.
    private let lazy: (any LazyStorePersistence)?

    /// A store for the types in `registry`.
    ///
    /// With no persistence the store keeps everything in memory. With a
    /// ``LazyStorePersistence`` (FlatlandSQLite's `SQLitePersistence`) it is lazy: a record is
    /// loaded on first access into a cache of at most ``LazyStorePersistence/cacheCapacity``
    /// records, and queries (ids, counts, types, secondary indexes, collections) are answered by
    /// the persistence. With a persistence that only writes, the store keeps everything in memory
    /// and writes each batch through.
    public init(
        registry: EntityRegistry = EntityRegistry(), hooks: StoreHooks = StoreHooks(),
        persistence: (any StorePersistence)? = nil
    ) {
        self.registry = registry
        self.hooks = hooks
        self.persistence = persistence
        lazy = persistence as? any LazyStorePersistence
        if let lazy {
            contents.backing = PersistentBacking(source: lazy, registry: registry, cacheCapacity: lazy.cacheCapacity)
        }
    }

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
    /// are always current.
    ///
    /// - Throws: a migration's or the persistence's error; nothing is written then.
    @discardableResult
    public func upgradeRecords() throws -> Int {
        guard let lazy else { return 0 }
        return try lock.withLock { () throws -> Int in
            var upgraded: [EntityBox] = []
            for prefix in registry.prefixes {
                guard let type = registry.type(forPrefix: prefix) else { continue }
                let ids = try lazy.outdatedIDs(prefix: prefix, classVersion: type.classVersion)
                for stored in try lazy.loadRecords(ids: ids) {
                    upgraded.append(try registry.decodeStored(stored))
                }
            }
            guard !upgraded.isEmpty else { return 0 }
            try lazy.write(PersistedBatch(records: upgraded.map(EntityRecord.init), removed: [], collections: []))
            for box in upgraded { contents.put(box, replacing: nil) }
            return upgraded.count
        }
    }

    // MARK: Writing

    /// Inserts or replaces an entity; every declared field counts as present.
    @discardableResult
    public func upsert<E: Entity>(_ entity: E) throws -> ChangeSet {
        guard let type = registry.type(forPrefix: E.prefix) as? TypedEntityType<E> else {
            throw RegistryError("\(E.self) is not registered with this store")
        }
        var present = FieldSet()
        for i in type.fields.indices { present.insert(i) }
        let box = TypedBox(value: entity, present: present, dataVersion: nil, type: type)
        var batch = PendingBatch()
        batch.insert(box)
        return try apply(&batch, taskID: nil, endpoint: nil).changes
    }

    /// Removes records by id.
    @discardableResult
    public func remove(_ ids: [String]) throws -> ChangeSet {
        var changes = ChangeSet()
        try lock.withLock { () throws -> Void in
            let present = ids.filter { contents.containsID($0) }
            try persistence?.write(PersistedBatch(records: [], removed: present, collections: []))
            for id in present { contents.remove(id) }
            changes.removed = present
        }
        notify(changes)
        return changes
    }

    /// Removes one entity.
    @discardableResult
    public func remove<E: Entity>(_ id: EntityID<E>) throws -> ChangeSet { try remove([id.rawValue]) }

    /// Removes everything: records and collections (a logout).
    public func removeAll() throws {
        let ids = allIDs()
        try remove(ids)
        try lock.withLock { () throws -> Void in
            if let backing = contents.backing {
                let collections = contents.orderedCollections(kind: nil).map(\.id)
                if !collections.isEmpty {
                    try persistence?.write(
                        PersistedBatch(records: [], removed: [], collections: [], removedCollections: collections))
                }
                backing.cache?.removeAll()
            } else {
                contents = StoreContents()
            }
        }
    }

    /// Puts back a record read from persistence, as it was written: its fields as JSON (as
    /// ``EntityRecord/fields`` gives them), the class version it was written under and its data
    /// version. A typed record written under an older class version is first upgraded by its
    /// type's ``Entity/migrate(_:from:)``; a prefix with no registered type gives an untyped
    /// record. Restoring replaces any record with that id, and does not run hooks or notify
    /// observers: it is how a persistence layer that only writes loads what it stored. (A lazy
    /// store loads by itself; restoring into one writes the record through to its persistence.)
    ///
    /// - Throws: the migration's error, or ``FieldError`` when a stored field cannot be decoded;
    ///   the store is then unchanged.
    @discardableResult
    public func restore(
        id: String, prefix: String, fields: JSONObject, classVersion: Int, dataVersion: Double?
    ) throws -> EntityRecord {
        let box = try registry.decodeStored(
            id: id, prefix: prefix, fields: fields, classVersion: classVersion, dataVersion: dataVersion)
        try lock.withLock { () throws -> Void in
            if let lazy {
                try lazy.write(PersistedBatch(records: [EntityRecord(box)], removed: [], collections: []))
                contents.put(box, replacing: nil)
            } else {
                contents.put(box, replacing: contents.records[box.key])
            }
        }
        return EntityRecord(box)
    }

    // MARK: Ingesting

    /// Whether this is an in-memory store with no records (yet).
    var isEmptyInMemory: Bool {
        persistence == nil && lock.withLock { contents.backing == nil && contents.records.isEmpty }
    }

    func currentVersion(of id: String) -> Double? { lock.withLock { contents.box(id)?.dataVersion } }

    /// Applies a batch atomically: every record and collection, or (if persistence fails) none.
    func apply(_ batch: inout PendingBatch, taskID: String?, endpoint: String?) throws -> IngestResult {
        if let before = hooks.beforeStore {
            batch.forEachDraft { before(IncomingEntity(draft: $0)) }
        }
        var changes = ChangeSet()
        var written: [(box: EntityBox, old: EntityBox?)] = []
        var collections: [EntityCollection] = []
        var endpointCollection: EntityCollection?
        let taskCollection = EntityCollection(
            id: newID(prefix: "c"), displayIdentifier: taskID ?? newID(prefix: "t"), kind: .task,
            items: batch.taskItems, total: batch.taskItems.count)

        try lock.withLock { () throws -> Void in
            // An in-memory store cannot fail to take the records: each is put in place as soon as
            // it is worked out, in one pass over the batch while its box is in cache. Otherwise
            // every new record is worked out first, without touching the contents...
            let inPlace = persistence == nil && contents.backing == nil
            let keepWritten = !inPlace || hooks.afterStore != nil
            // An empty in-memory store takes the batch's drafts as its records (every draft is a
            // new record), instead of inserting them one by one into a second table, and what the
            // batch tallied of them while each was in cache: their ids, counts and indexed ones
            // (an ingestor that began on an empty store has its batch tally them).
            let adopted = inPlace && contents.records.isEmpty && batch.tallies
            if keepWritten { written.reserveCapacity(batch.drafts.count) }
            if adopted {
                if keepWritten { batch.forEachDraft { written.append(($0, nil)) } }
                contents.records = batch.drafts
                batch.drafts = RecordTable()
                contents.prefixCounts = batch.counts
                changes.inserted = batch.ids
                contents.adoptIndexes(of: &batch)
            } else {
                if inPlace { contents.records.reserveCapacity(contents.records.count + batch.drafts.count) }
                changes.inserted.reserveCapacity(batch.drafts.count)
                func write(_ box: EntityBox, replacing old: EntityBox?) {
                    if keepWritten { written.append((box, old)) }
                    if inPlace { contents.put(box, replacing: old) }
                }
                // A lazy store loads the batch's stored records in one go.
                let loaded = contents.backing?.boxes(ids: batch.drafts.boxes.map(\.id))
                batch.forEachDraft { draft in
                    guard let old = loaded.map({ $0[draft.id] }) ?? contents.records[draft.key] else {
                        // A new record: the draft itself becomes the stored box.
                        changes.inserted.append(draft.id)
                        write(draft, replacing: nil)
                        return
                    }
                    if let incoming = draft.dataVersion, let stored = old.dataVersion, incoming <= stored { return }
                    let (box, changed) = old.merged(with: draft)
                    if !changed.isEmpty {
                        changes.updated.append(ChangeSet.Update(id: draft.id, fields: changed))
                        write(box, replacing: old)
                    } else if box.dataVersion != old.dataVersion {
                        // Same fields at a newer version: keep the version, or a later response at
                        // the old version would be applied over it.
                        write(box, replacing: old)
                    }
                }
            }
            collections.append(taskCollection)
            if let endpoint {
                let collection = updatedEndpointCollection(endpoint, batch: batch)
                collections.append(collection)
                endpointCollection = collection
            }
            // ...write them through (all or nothing)...
            try persistence?.write(
                PersistedBatch(records: written.map { EntityRecord($0.box) }, removed: [], collections: collections))
            // ...then apply them in place.
            if let backing = contents.backing, let capacity = backing.cache?.capacity, written.count > capacity {
                // A batch bigger than a lazy store's cache: only its last records are kept.
                let skipped = written.count - capacity
                for entry in written.prefix(skipped) { backing.cache?.remove(entry.box.id) }
                for entry in written.dropFirst(skipped) { backing.cache?.put(entry.box) }
            } else if !inPlace {
                for entry in written { contents.put(entry.box, replacing: entry.old) }
            }
            for collection in collections { contents.putCollection(collection) }
        }
        notify(changes)
        if let after = hooks.afterStore { for entry in written { after(EntityRecord(entry.box)) } }
        return IngestResult(
            taskCollection: taskCollection, endpointCollection: endpointCollection, changes: changes, skipped: [],
            bytes: 0)
    }

    /// The endpoint's collection with this response's items, by the rules of "Collections over
    /// time" (`PendingBatch.endpointCollection(_:existing:)`).
    private func updatedEndpointCollection(_ endpoint: String, batch: PendingBatch) -> EntityCollection {
        batch.endpointCollection(endpoint, existing: contents.collection(displayIdentifier: endpoint))
    }

    // MARK: Observation

    /// The change sets of every later write, optionally only those touching records with this
    /// prefix or this id. The sequence ends when the consumer stops iterating.
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

    private func notify(_ changes: ChangeSet) {
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
