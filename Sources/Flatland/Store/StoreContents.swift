/// Everything a store holds at one moment. A value: a snapshot is a copy of it.
public struct StoreContents: Sendable {
    var records: [String: EntityRecord] = [:]
    var idsByPrefix: [String: Set<String>] = [:]
    /// `prefix.index` → value → ids.
    var indexes: [String: [IndexValue: Set<String>]] = [:]
    var collections: [String: EntityCollection] = [:]
    var collectionIDByDisplay: [String: String] = [:]
    /// Collection ids in the order they were created.
    var collectionOrder: [String] = []

    mutating func insertIndexes(_ record: EntityRecord, type: EntityType?) {
        guard let type, case .typed(let value) = record.payload else { return }
        for entry in type.indexValues(value) {
            indexes["\(record.prefix).\(entry.name)", default: [:]][entry.value, default: []].insert(record.id)
        }
    }

    mutating func removeIndexes(_ record: EntityRecord, type: EntityType?) {
        guard let type, case .typed(let value) = record.payload else { return }
        for entry in type.indexValues(value) {
            indexes["\(record.prefix).\(entry.name)"]?[entry.value]?.remove(record.id)
        }
    }

    mutating func put(_ record: EntityRecord, type: EntityType?) {
        if let old = records[record.id] { removeIndexes(old, type: type) }
        records[record.id] = record
        idsByPrefix[record.prefix, default: []].insert(record.id)
        insertIndexes(record, type: type)
    }

    @discardableResult
    mutating func remove(_ id: String, type: EntityType?) -> Bool {
        guard let old = records.removeValue(forKey: id) else { return false }
        removeIndexes(old, type: type)
        idsByPrefix[old.prefix]?.remove(id)
        return true
    }

    mutating func putCollection(_ collection: EntityCollection) {
        if collections.updateValue(collection, forKey: collection.id) == nil { collectionOrder.append(collection.id) }
        collectionIDByDisplay[collection.displayIdentifier] = collection.id
    }
}

/// The read API shared by a live ``Store`` and a ``StoreSnapshot``.
public protocol StoreReader {
    /// Calls `body` with a consistent view of the contents.
    func withContents<R>(_ body: (StoreContents) throws -> R) rethrows -> R
}

extension StoreReader {
    /// The record with this id, typed or untyped.
    public func record(id: String) -> EntityRecord? { withContents { $0.records[id] } }

    /// The entity with this id.
    public func entity<E: Entity>(_ id: EntityID<E>) -> E? {
        withContents { $0.records[id.rawValue]?.entity(as: E.self) }
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
            (c.idsByPrefix[E.prefix] ?? []).sorted().compactMap { c.records[$0]?.entity(as: E.self) }
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
            (c.indexes["\(E.prefix).\(name)"]?[IndexValue(value)] ?? []).sorted().compactMap {
                c.records[$0]?.entity(as: E.self)
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
