import FlatlandJSON

/// Everything a store holds at one moment. A value: a snapshot is a copy of it.
///
/// An in-memory store keeps its records here. A lazy store (one on a ``LazyStorePersistence``)
/// reads through its backing instead: a bounded cache of decoded records in front of the
/// persistence, or, in a snapshot, the persistence's snapshot.
///
/// Not part of the public API: it is public only as SPI, because ``StoreReader``'s one
/// requirement hands it over.
@_spi(StoreInternals)
public struct StoreContents: Sendable {
    var records = RecordTable()
    /// Set in a lazy store: records, indexes and collections live in persistence.
    var backing: PersistentBacking?
    /// How many records each prefix has. (The records of one prefix are listed by a scan: a
    /// set of each prefix's ids would cost every new record an insertion, and the store a second
    /// table of every id, for the sake of a listing that is rarely asked for.)
    var prefixCounts = PrefixCounts()
    /// `prefix.index` → value → ids.
    var indexes: [String: IndexTable] = [:]
    var collections: [String: EntityCollection] = [:]
    var collectionIDByDisplay: [String: String] = [:]
    /// Collection ids in the order they were created.
    var collectionOrder: [String] = []

    mutating func insertIndexes(_ box: EntityBox, type: EntityType) {
        type.forEachIndexEntry(of: box) { key, value in
            indexes[key, default: IndexTable()].insert(box.id, for: value)
        }
    }

    /// Takes the index tables `batch` filled while each of its drafts was in cache, when an
    /// empty store takes the drafts over as its records: an empty table is replaced whole, and
    /// nothing visits the records again.
    mutating func adoptIndexes(of batch: inout PendingBatch) {
        for (key, table) in batch.takeIndexTables() {
            if indexes[key]?.isEmpty == false {
                indexes[key]!.formUnion(table)
            } else {
                indexes[key] = table
            }
        }
    }

    mutating func removeIndexes(_ box: EntityBox, type: EntityType) {
        type.forEachIndexEntry(of: box) { key, value in indexes[key]?.remove(box.id, for: value) }
    }

    /// Stores `box`, which replaces `old` (nil for a new id).
    mutating func put(_ box: EntityBox, replacing old: EntityBox?) {
        if let backing {
            backing.cache?.put(box)
            return
        }
        records.put(box)
        if old == nil { prefixCounts.add(box, 1) }
        if let type = box.type, type.hasIndexes {
            if let old { removeIndexes(old, type: type) }
            insertIndexes(box, type: type)
        }
    }

    @discardableResult
    mutating func remove(_ id: String) -> Bool {
        if let backing {
            backing.cache?.remove(id)
            return true
        }
        let key = RecordKey(id)
        guard let old = records.remove(key) else { return false }
        if let type = old.type, type.hasIndexes { removeIndexes(old, type: type) }
        prefixCounts.add(old, -1)
        return true
    }

    mutating func putCollection(_ collection: EntityCollection) {
        guard backing == nil else { return }
        if collections.updateValue(collection, forKey: collection.id) == nil { collectionOrder.append(collection.id) }
        collectionIDByDisplay[collection.displayIdentifier] = collection.id
    }

    mutating func removeCollection(_ id: String) {
        guard backing == nil, let removed = collections.removeValue(forKey: id) else { return }
        collectionOrder.removeAll { $0 == id }
        if collectionIDByDisplay[removed.displayIdentifier] == id {
            // The display identifier finds the last collection written with it that is left.
            collectionIDByDisplay[removed.displayIdentifier] = collectionOrder.last {
                collections[$0]?.displayIdentifier == removed.displayIdentifier
            }
        }
    }

    /// The ids of the task collections, oldest first (nil when a lazy store cannot read them).
    func taskCollectionIDs() -> [String]? {
        guard let backing else { return collectionOrder.filter { collections[$0]?.kind == .task } }
        if let known = backing.taskCollectionIDs { return known }
        return backing.attempt { try backing.source.collections(kind: .task).map(\.id) }
    }

    // MARK: Reads (in memory, or through the backing)

    /// The record with this id.
    @inline(__always)
    func box(_ id: String) -> EntityBox? {
        if let backing { return backing.box(id) }
        return records[RecordKey(id)]
    }

    func containsID(_ id: String) -> Bool {
        if let backing { return backing.contains(id) }
        return records[RecordKey(id)] != nil
    }

    func sortedIDs(prefix: String) -> [String] {
        if let backing { return backing.attempt { try backing.source.ids(prefix: prefix) } ?? [] }
        return boxes(prefix: prefix).map(\.id)
    }

    func allSortedIDs() -> [String] {
        if let backing { return backing.attempt { try backing.source.ids(prefix: nil) } ?? [] }
        return records.boxes.map(\.id).sorted()
    }

    /// The records with this prefix, sorted by id.
    func boxes(prefix: String) -> [EntityBox] {
        if let backing { return backing.boxes(prefix: prefix) }
        return records.boxes.filter { $0.prefix == prefix }.sorted { $0.id < $1.id }
    }

    var recordCount: Int {
        if let backing { return backing.attempt { try backing.source.count(prefix: nil) } ?? 0 }
        return records.count
    }

    func recordCount(prefix: String) -> Int {
        if let backing { return backing.attempt { try backing.source.count(prefix: prefix) } ?? 0 }
        return prefixCounts[prefix]
    }

    var countsByPrefix: [String: Int] {
        if let backing { return backing.attempt { try backing.source.countsByPrefix() } ?? [:] }
        return prefixCounts.all
    }

    /// The records whose index `key` (`prefix.name`) holds `value`, sorted by id. A lazy store
    /// asks the SQL index and checks each record it loads.
    func boxes(index key: String, value: IndexValue, type: EntityType) -> [EntityBox] {
        guard let backing else {
            return (indexes[key]?.ids(for: value) ?? []).sorted().compactMap { records[RecordKey($0)] }
        }
        let ids = backing.attempt { try backing.source.ids(index: key, value: value.persistentText) } ?? []
        let found = backing.boxes(ids: ids)
        return ids.sorted().compactMap { id in
            guard let box = found[id] else { return nil }
            return type.indexEntries(box).contains { $0.key == key && $0.value == value } ? box : nil
        }
    }

    func collection(id: String) -> EntityCollection? {
        if let backing { return backing.attempt { try backing.source.collection(id: id) } ?? nil }
        return collections[id]
    }

    func collection(displayIdentifier: String) -> EntityCollection? {
        if let backing {
            return backing.attempt { try backing.source.collection(displayIdentifier: displayIdentifier) } ?? nil
        }
        return collectionIDByDisplay[displayIdentifier].flatMap { collections[$0] }
    }

    /// The collections of a kind (all when nil), in the order they were created.
    func orderedCollections(kind: EntityCollection.Kind?) -> [EntityCollection] {
        if let backing { return backing.attempt { try backing.source.collections(kind: kind) } ?? [] }
        let all = collectionOrder.compactMap { collections[$0] }
        guard let kind else { return all }
        return all.filter { $0.kind == kind }
    }
}

/// How many records a store has of each prefix: counted by entity type (a pointer compared with
/// the few types a store holds) rather than by hashing the prefix of every record stored.
struct PrefixCounts: Sendable {
    private var typed: [(type: ObjectIdentifier, prefix: String, count: Int)] = []
    private var untyped: [String: Int] = [:]

    /// Counts `box` in (`delta` 1) or out (-1).
    mutating func add(_ box: EntityBox, _ delta: Int) {
        // Compared by identity, the box's type is not retained: this runs for every new record.
        guard let id = box.typeIdentifier else {
            untyped[box.prefix, default: 0] += delta
            return
        }
        for i in typed.indices where typed[i].type == id {
            typed[i].count += delta
            return
        }
        typed.append((id, box.type.unsafelyUnwrapped.prefix, delta))
    }

    subscript(prefix: String) -> Int {
        typed.reduce(untyped[prefix] ?? 0) { $0 + ($1.prefix == prefix ? $1.count : 0) }
    }

    /// Every prefix with at least one record.
    var all: [String: Int] {
        var counts = untyped
        for entry in typed { counts[entry.prefix, default: 0] += entry.count }
        return counts.filter { $0.value > 0 }
    }
}

/// The read API shared by a live ``Store`` and a ``StoreSnapshot``.
public protocol StoreReader {
    /// Calls `body` with a consistent view of the contents (SPI: the contents' members are
    /// internal; use the reads below).
    @_spi(StoreInternals)
    func withContents<R>(_ body: (StoreContents) throws -> R) rethrows -> R
}

extension StoreReader {
    /// The record with this id, typed or untyped.
    public func record(id: String) -> EntityRecord? { withContents { $0.box(id).map(EntityRecord.init) } }

    /// The entity with this id.
    public func entity<E: Entity>(_ id: EntityID<E>) -> E? {
        withContents { ($0.box(id.rawValue) as? TypedBox<E>)?.value }
    }

    /// The record of the entity with this id (present fields, versions).
    public func record<E: Entity>(_ id: EntityID<E>) -> EntityRecord? { record(id: id.rawValue) }

    /// Whether a record with this id exists.
    public func contains(_ id: String) -> Bool { withContents { $0.containsID(id) } }

    /// Whether this entity exists.
    public func contains<E: Entity>(_ id: EntityID<E>) -> Bool { contains(id.rawValue) }

    /// Every entity of a type, sorted by id. In memory this looks at every record (the records
    /// of a type are counted, not indexed); a lazy store asks its persistence.
    public func all<E: Entity>(_ type: E.Type) -> [E] {
        withContents { c in c.boxes(prefix: E.prefix).compactMap { ($0 as? TypedBox<E>)?.value } }
    }

    /// The ids of every record with this prefix, sorted. In memory this looks at every record.
    public func ids(prefix: String) -> [String] { withContents { $0.sortedIDs(prefix: prefix) } }

    /// Every id in the store, sorted.
    public func allIDs() -> [String] { withContents { $0.allSortedIDs() } }

    /// The number of records.
    public var count: Int { withContents { $0.recordCount } }

    /// The number of records with this prefix.
    public func count(prefix: String) -> Int { withContents { $0.recordCount(prefix: prefix) } }

    /// The number of records per prefix.
    public var countsByPrefix: [String: Int] { withContents { $0.countsByPrefix } }

    /// The entities of `E` whose indexed property at `keyPath` equals `value`, sorted by id.
    /// The property must be declared in ``Entity/indexes``; the lookup does not scan. Strings
    /// match by their UTF-8 bytes (see ``EntityIndex``).
    ///
    /// - Throws: ``StoreQueryError/Code-swift.struct/undeclaredIndex`` when `E` declares no
    ///   index on `keyPath`.
    public func entities<E: Entity, V: Hashable & Sendable>(where keyPath: KeyPath<E, V>, equals value: V)
        throws(StoreQueryError) -> [E]
    {
        guard let name = E.indexes.first(where: { ($0.keyPath as AnyKeyPath) == (keyPath as AnyKeyPath) })?.name else {
            throw StoreQueryError(
                .undeclaredIndex, "\(E.self) declares no index on \(keyPath): list it in \(E.self).indexes")
        }
        return withContents { c in
            guard let type = c.backing?.registry.type(forPrefix: E.prefix) else {
                return (c.indexes["\(E.prefix).\(name)"]?.ids(for: IndexValue(value)) ?? []).sorted().compactMap {
                    (c.records[RecordKey($0)] as? TypedBox<E>)?.value
                }
            }
            return c.boxes(index: "\(E.prefix).\(name)", value: IndexValue(value), type: type).compactMap {
                ($0 as? TypedBox<E>)?.value
            }
        }
    }

    /// The collection with this id.
    public func collection(id: String) -> EntityCollection? { withContents { $0.collection(id: id) } }

    /// The collection with this display identifier: a task's uuid, or a non-fielded endpoint.
    public func collection(displayIdentifier: String) -> EntityCollection? {
        withContents { $0.collection(displayIdentifier: displayIdentifier) }
    }

    /// Every collection, sorted by display identifier.
    public var collections: [EntityCollection] {
        withContents { $0.orderedCollections(kind: nil).sorted { $0.displayIdentifier < $1.displayIdentifier } }
    }

    /// The collections of one kind, in the order they were created.
    public func collections(kind: EntityCollection.Kind) -> [EntityCollection] {
        withContents { $0.orderedCollections(kind: kind) }
    }
}

/// A consistent, immutable view of a store at one moment: later writes do not change it.
public struct StoreSnapshot: StoreReader, Sendable {
    let contents: StoreContents
    @_spi(StoreInternals)
    public func withContents<R>(_ body: (StoreContents) throws -> R) rethrows -> R { try body(contents) }
}

/// A value of an indexed property. The values come from `Hashable & Sendable` properties only.
///
/// Strings, the common case (an email, a handle), are kept as themselves, also when the property
/// is an optional string, and are the same value when their UTF-8 bytes are, as they are in SQL
/// (and as ids are, see ``RecordKey``): hashed with ``idHash(_:)`` and compared byte for byte,
/// instead of through `AnyHashable` and `String`'s Unicode-aware hashing, which costs several
/// times as much.
@usableFromInline
struct IndexValue: Hashable, @unchecked Sendable {
    private enum Storage {
        case string(String)
        case other(AnyHashable)
    }
    private let storage: Storage
    /// The value's hash, worked out once (see ``RecordKey``).
    let hash: Int

    @usableFromInline
    init<V: Hashable & Sendable>(_ value: V) {
        if V.self == String.self {
            self.init(string: unsafeBitCast(value, to: String.self))
        } else if V.self == String?.self, let string = unsafeBitCast(value, to: String?.self) {
            self.init(string: string)
        } else {
            self.init(other: AnyHashable(value))
        }
    }

    private init(string: String) {
        storage = .string(string)
        hash = idHash(of: string)
    }

    private init(other: AnyHashable) {
        storage = .other(other)
        hash = other.hashValue
    }

    @usableFromInline
    static func == (a: IndexValue, b: IndexValue) -> Bool {
        guard a.hash == b.hash else { return false }
        switch (a.storage, b.storage) {
        case (.string(var x), .string(let y)):
            return x.withUTF8 { JSONBytes(unsafeBuffer: UnsafeRawBufferPointer($0)).equals(y) }
        case (.other(let x), .other(let y)):
            return x == y
        default:
            return false
        }
    }

    @usableFromInline
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    @usableFromInline func _rawHashValue(seed: Int) -> Int { mixHash(hash, seed: seed) }

    /// The value itself.
    var base: Any {
        switch storage {
        case .string(let string): string
        case .other(let value): value.base
        }
    }
}
