import FlatlandJSON

/// A change to a store's entities and collections, applied by ``Store/commit(_:alongside:)``
/// as one write: all of it, or (when the persistence or the work alongside fails) none of it.
///
/// ```swift
/// var change = StoreChange()
/// change.upsert(draftOrder)
/// change.remove(EntityID<Order>("o-cancelled"))
/// try store.commit(change)
/// ```
///
/// Within one change, the last word on an id wins: upserting an id after removing it keeps
/// the upsert, removing it after upserting it keeps the removal.
public struct StoreChange: Sendable {
    /// One upsert: the entity's id, and how to make its record once the store's registry is
    /// known.
    struct Upsert: Sendable {
        var id: String
        var make: @Sendable (EntityRegistry) throws -> EntityBox
    }

    private(set) var upserts: [Upsert] = []
    private(set) var removed: [String] = []
    private(set) var removedCollections: [String] = []

    /// An empty change.
    public init() {}

    /// Whether the change does nothing.
    public var isEmpty: Bool { upserts.isEmpty && removed.isEmpty && removedCollections.isEmpty }

    /// Inserts or replaces `entity`, every declared field counting as present (as
    /// ``Store/upsert(_:)`` does). Its type must be registered with the store the change is
    /// committed to (a ``RegistryError`` at commit otherwise).
    public mutating func upsert<E: Entity>(_ entity: E) {
        let id = entity.id.rawValue
        removed.removeAll { $0 == id }
        upserts.removeAll { $0.id == id }
        upserts.append(Upsert(id: id) { registry in try registry.box(for: entity) })
    }

    /// Inserts or updates the record with this id from its fields as JSON, as if a response
    /// carried them: the fields given replace the stored ones, the others stay, and a record
    /// not newer than the stored one (by `dataVersion`) is skipped. A registered prefix decodes
    /// the fields into its type (a ``FieldError`` at commit when they do not fit); any other
    /// prefix gives an untyped record.
    public mutating func upsert(id: String, fields: JSONObject, dataVersion: Double? = nil) {
        removed.removeAll { $0 == id }
        upserts.removeAll { $0.id == id }
        upserts.append(
            Upsert(id: id) { registry in
                let prefix = EntityIDFormat.prefix(of: id) ?? ""
                return try registry.decodeStored(
                    id: id, prefix: prefix, fields: fields,
                    classVersion: registry.type(forPrefix: prefix)?.classVersion ?? 1, dataVersion: dataVersion)
            })
    }

    /// Removes the record with this id (and the id from every collection) if it exists.
    public mutating func remove(_ id: String) {
        upserts.removeAll { $0.id == id }
        if !removed.contains(id) { removed.append(id) }
    }

    /// Removes this entity (and its id from every collection) if it exists.
    public mutating func remove<E: Entity>(_ id: EntityID<E>) { remove(id.rawValue) }

    /// Removes the collection with this id, if it exists.
    public mutating func removeCollection(id: String) {
        if !removedCollections.contains(id) { removedCollections.append(id) }
    }
}

extension EntityRegistry {
    /// The record of `entity` with every declared field present, for an upsert.
    func box<E: Entity>(for entity: E) throws(RegistryError) -> EntityBox {
        guard let type = type(forPrefix: E.prefix) as? TypedEntityType<E> else {
            throw RegistryError("\(E.self) is not registered with this store")
        }
        var present = FieldSet()
        for i in type.fields.indices { present.insert(i) }
        return TypedBox(value: entity, present: present, dataVersion: nil, type: type)
    }
}

/// One write, as the store's single commit path applies it: what every writing method of the
/// store (an ingest, ``Store/commit(_:alongside:)``, upsert, remove, removeAll, removeCollection,
/// restore, upgradeRecords) builds and hands to ``Store/commit(_:alongside:)-(StoreWrite,_)``.
struct StoreWrite {
    /// What this write is, for the hooks and observers.
    enum Kind {
        /// New data (an ingest, an upsert, a commit, a removal): `beforeStore` runs for each
        /// draft, `afterStore` for each record inserted or changed, and observers hear of it.
        case data
        /// Records put back as they were stored or upgraded to the current class version
        /// (restore, upgradeRecords): what the app sees does not change, so no hook runs and no
        /// observer hears of it.
        case maintenance
    }

    var kind = Kind.data
    /// Drafts merged into the stored records: a record not newer than the stored one is
    /// skipped, the fields a draft carries replace the stored ones.
    var batch = PendingBatch()
    /// For an ingest: the task collection to make (and whether the store keeps it) and the
    /// endpoint whose collection to update.
    var ingest: Ingest?
    typealias Ingest = (taskID: String?, endpoint: String?, keepsTaskCollection: Bool)
    /// Records put as they are (restore, upgrade), replacing any record with their id.
    var restored: [EntityBox] = []
    /// Ids removed (those that exist), from the records and from every collection.
    var removed: [String] = []
    /// Whether every record and collection goes (a logout); `removed` is then ignored.
    var removesEverything = false
    /// Collections removed by id.
    var removedCollections: [String] = []
}

/// What one commit did.
struct CommitResult {
    var changes = ChangeSet()
    var taskCollection: EntityCollection?
    var endpointCollection: EntityCollection?
}
