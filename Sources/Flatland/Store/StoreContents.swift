/// Everything a store holds at one moment. A value: a snapshot is a copy of it.
public struct StoreContents: Sendable {
    var records: [String: EntityBox] = [:]
    var idsByPrefix: [String: Set<String>] = [:]
    /// `prefix.index` → value → ids.
    var indexes: [String: [IndexValue: IDSet]] = [:]
    var collections: [String: EntityCollection] = [:]
    var collectionIDByDisplay: [String: String] = [:]
    /// Collection ids in the order they were created.
    var collectionOrder: [String] = []

    mutating func insertIndexes(_ box: EntityBox, type: EntityType) {
        for entry in type.indexEntries(box) {
            indexes[entry.key, default: [:]][entry.value, default: IDSet()].insert(box.id)
        }
    }

    mutating func removeIndexes(_ box: EntityBox, type: EntityType) {
        for entry in type.indexEntries(box) { indexes[entry.key]?[entry.value]?.remove(box.id) }
    }

    /// Stores `box`, which replaces `old` (nil for a new id; the caller has already put it in
    /// `records` when `alreadyStored`).
    mutating func put(_ box: EntityBox, replacing old: EntityBox?, alreadyStored: Bool = false) {
        if !alreadyStored { records[box.id] = box }
        if old == nil { idsByPrefix[box.prefix, default: []].insert(box.id) }
        if let type = box.type, type.hasIndexes {
            if let old { removeIndexes(old, type: type) }
            insertIndexes(box, type: type)
        }
    }

    @discardableResult
    mutating func remove(_ id: String) -> Bool {
        guard let old = records.removeValue(forKey: id) else { return false }
        if let type = old.type, type.hasIndexes { removeIndexes(old, type: type) }
        idsByPrefix[old.prefix]?.remove(id)
        return true
    }

    mutating func putCollection(_ collection: EntityCollection) {
        if collections.updateValue(collection, forKey: collection.id) == nil { collectionOrder.append(collection.id) }
        collectionIDByDisplay[collection.displayIdentifier] = collection.id
    }
}

/// The ids under one index value: most values (an email) have one id, so it is kept inline.
struct IDSet: Sendable {
    private var single: String?
    private var many: Set<String>?

    init() {}

    mutating func insert(_ id: String) {
        if many != nil {
            many!.insert(id)
        } else if let single, single != id {
            many = [single, id]
            self.single = nil
        } else {
            single = id
        }
    }

    mutating func remove(_ id: String) {
        if single == id { single = nil }
        many?.remove(id)
    }

    var ids: [String] { many.map { Array($0) } ?? single.map { [$0] } ?? [] }
}

/// The read API shared by a live ``Store`` and a ``StoreSnapshot``.
public protocol StoreReader {
    /// Calls `body` with a consistent view of the contents.
    func withContents<R>(_ body: (StoreContents) throws -> R) rethrows -> R
}

extension StoreReader {
    /// The record with this id, typed or untyped.
    public func record(id: String) -> EntityRecord? { withContents { $0.records[id].map(EntityRecord.init) } }

    /// The entity with this id.
    public func entity<E: Entity>(_ id: EntityID<E>) -> E? {
        withContents { ($0.records[id.rawValue] as? TypedBox<E>)?.value }
    }

    /// The record of the entity with this id (present fields, versions).
    public func record<E: Entity>(_ id: EntityID<E>) -> EntityRecord? { record(id: id.rawValue) }

    /// Whether a record with this id exists.
    public func contains(_ id: String) -> Bool { withContents { $0.records[id] != nil } }

    /// Whether this entity exists.
    public func contains<E: Entity>(_ id: EntityID<E>) -> Bool { contains(id.rawValue) }

    /// Every entity of a type, sorted by id (from the index by type, not a scan).
    public func all<E: Entity>(_ type: E.Type) -> [E] {
        withContents { c in
            (c.idsByPrefix[E.prefix] ?? []).sorted().compactMap { (c.records[$0] as? TypedBox<E>)?.value }
        }
    }

    /// The ids of every record with this prefix, sorted.
    public func ids(prefix: String) -> [String] { withContents { ($0.idsByPrefix[prefix] ?? []).sorted() } }

    /// Every id in the store, sorted.
    public func allIDs() -> [String] { withContents { $0.records.keys.sorted() } }

    /// The number of records.
    public var count: Int { withContents { $0.records.count } }

    /// The number of records with this prefix.
    public func count(prefix: String) -> Int { withContents { $0.idsByPrefix[prefix]?.count ?? 0 } }

    /// The number of records per prefix.
    public var countsByPrefix: [String: Int] {
        withContents { c in c.idsByPrefix.compactMapValues { $0.isEmpty ? nil : $0.count } }
    }

    /// The entities of `E` whose indexed property at `keyPath` equals `value`, sorted by id.
    /// The property must be declared in ``Entity/indexes``; the lookup does not scan.
    public func entities<E: Entity, V: Hashable & Sendable>(where keyPath: KeyPath<E, V>, equals value: V) -> [E] {
        guard let name = E.indexes.first(where: { ($0.keyPath as AnyKeyPath) == (keyPath as AnyKeyPath) })?.name else {
            preconditionFailure("\(E.self) declares no index on \(keyPath)")
        }
        return withContents { c in
            (c.indexes["\(E.prefix).\(name)"]?[IndexValue(value)]?.ids ?? []).sorted().compactMap {
                (c.records[$0] as? TypedBox<E>)?.value
            }
        }
    }

    /// The collection with this id.
    public func collection(id: String) -> EntityCollection? { withContents { $0.collections[id] } }

    /// The collection with this display identifier: a task's uuid, or a non-fielded endpoint.
    public func collection(displayIdentifier: String) -> EntityCollection? {
        withContents { c in c.collectionIDByDisplay[displayIdentifier].flatMap { c.collections[$0] } }
    }

    /// Every collection, sorted by display identifier.
    public var collections: [EntityCollection] {
        withContents { $0.collections.values.sorted { $0.displayIdentifier < $1.displayIdentifier } }
    }

    /// The collections of one kind, in the order they were created.
    public func collections(kind: EntityCollection.Kind) -> [EntityCollection] {
        withContents { c in c.collectionOrder.compactMap { c.collections[$0] }.filter { $0.kind == kind } }
    }
}

/// A consistent, immutable view of a store at one moment: later writes do not change it.
public struct StoreSnapshot: StoreReader, Sendable {
    let contents: StoreContents
    public func withContents<R>(_ body: (StoreContents) throws -> R) rethrows -> R { try body(contents) }
}

/// A value of an indexed property. The values come from `Hashable & Sendable` properties only.
struct IndexValue: Hashable, @unchecked Sendable {
    let value: AnyHashable
    init<V: Hashable & Sendable>(_ value: V) { self.value = AnyHashable(value) }
    init(erased value: AnyHashable) { self.value = value }
}
