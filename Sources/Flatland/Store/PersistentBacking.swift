import FlatlandJSON

/// What a lazy store reads through: a persistence source, the registry that decodes its records
/// and, for the live store, the bounded cache. A live backing is used under the store's lock; a
/// snapshot's has no cache and only counts under its own lock, so any thread may read it.
final class PersistentBacking: @unchecked Sendable {
    let source: any StoredRecordSource
    let registry: EntityRegistry
    /// The live store's cache (nil for snapshots).
    var cache: RecordCache?
    /// The live store's task collections, oldest first, once read (for their retention).
    var taskCollectionIDs: [String]?
    private let counters = Lock()
    private var loadCount = 0
    private var failure: (any Error)?

    init(source: any StoredRecordSource, registry: EntityRegistry, cacheCapacity: Int?) {
        self.source = source
        self.registry = registry
        cache = cacheCapacity.map(RecordCache.init(capacity:))
    }

    /// How many records were decoded from persistence so far.
    var loads: Int { counters.withLock { loadCount } }

    /// The last error persistence gave a read, if any.
    var lastError: (any Error)? { counters.withLock { failure } }

    /// Runs a read; a failure reads as nothing and is remembered.
    func attempt<R>(_ body: () throws -> R) -> R? {
        do { return try body() } catch {
            counters.withLock { failure = error }
            return nil
        }
    }

    /// Decodes a stored record (running its type's migration when it is older).
    func decode(_ stored: StoredRecord) -> EntityBox? {
        counters.withLock { loadCount += 1 }
        return attempt { try registry.decodeStored(stored) }
    }

    /// The record with this id: from the cache, or loaded (and then cached).
    func box(_ id: String) -> EntityBox? {
        if cache != nil, let hit = cache!.get(id) { return hit }
        guard let stored = attempt({ try source.loadRecord(id: id) }) ?? nil, let box = decode(stored) else {
            return nil
        }
        cache?.put(box)
        return box
    }

    /// The records with these ids that exist, by id, loading those not in the cache in one go.
    func boxes(ids: [String]) -> [String: EntityBox] {
        var found: [String: EntityBox] = [:]
        var missing: [String] = []
        for id in ids {
            if let hit = cache?.peek(id) { found[id] = hit } else { missing.append(id) }
        }
        guard !missing.isEmpty else { return found }
        for stored in attempt({ try source.loadRecords(ids: missing) }) ?? [] {
            guard let box = decode(stored) else { continue }
            cache?.put(box)
            found[box.id] = box
        }
        return found
    }

    /// Every record with this prefix, sorted by id.
    func boxes(prefix: String) -> [EntityBox] {
        (attempt { try source.loadRecords(prefix: prefix) } ?? []).compactMap { stored in
            cache?.peek(stored.id) ?? decode(stored)
        }
    }

    func contains(_ id: String) -> Bool {
        if cache?.peek(id) != nil { return true }
        return attempt { try source.containsRecord(id: id) } ?? false
    }
}

extension EntityRegistry {
    /// A record from its stored form: typed when its prefix is registered (migrated from an
    /// older class version), untyped otherwise.
    func decodeStored(_ stored: StoredRecord) throws -> EntityBox {
        if stored.fields.first == StoredFields.marker { return try decodeEncoded(stored) }
        guard case .object(let fields) = try JSONValue(parsing: stored.fields) else {
            throw FieldError("the stored fields of \(stored.id) are not a JSON object")
        }
        return try decodeStored(
            id: stored.id, prefix: stored.prefix, fields: fields, classVersion: stored.classVersion,
            dataVersion: stored.dataVersion)
    }

    func decodeStored(id: String, prefix: String, fields: JSONObject, classVersion: Int, dataVersion: Double?) throws
        -> EntityBox
    {
        if let type = type(forPrefix: prefix) {
            return try type.decodeRecord(id: id, fields: fields, classVersion: classVersion, dataVersion: dataVersion)
        }
        let untyped = UntypedBox(key: RecordKey(id), prefix: prefix)
        untyped.fields = fields
        untyped.dataVersion = dataVersion
        untyped.classVersion = classVersion
        return untyped
    }
}
