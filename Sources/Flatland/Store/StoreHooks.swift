import FlatlandJSON

/// An entity as a response delivered it, before it reaches the store.
public struct IncomingEntity {
    let draft: EntityBox

    /// The full id.
    public var id: String { draft.id }
    /// The type prefix.
    public var prefix: String { draft.prefix }
    /// The JSON keys this response carried for it.
    public var presentFields: [String] { draft.presentKeys }
    /// The data version it carried, if any.
    public var dataVersion: Double? { draft.dataVersion }

    /// The incoming value, if it is an `E` (fields it did not carry are at their defaults).
    public func entity<E: Entity>(as type: E.Type = E.self) -> E? { (draft as? TypedBox<E>)?.value }

    /// The incoming fields of an untyped entity.
    public var untypedFields: JSONObject? { (draft as? UntypedBox)?.fields }

    /// Whether the entity is untyped (``untypedFields`` and ``untypedField(_:)`` read it).
    public var isUntyped: Bool { draft is UntypedBox }

    /// One incoming field of an untyped entity (the last member of that name, as in
    /// ``untypedFields``), read alone: cheaper than ``untypedFields`` when a condition looks at
    /// a field or two. Nil when the entity did not carry it, or is typed.
    public func untypedField(_ key: String) -> JSONValue? { (draft as? UntypedBox)?.field(key) }

    /// The incoming fields as JSON, typed or untyped (a typed entity's are written out, so
    /// ``untypedFields`` or ``entity(as:)`` is cheaper where the kind is known).
    public var fields: JSONObject { EntityRecord(draft).fields }

    /// One incoming field as JSON, typed or untyped, read alone: a typed entity's one field is
    /// written out, not all of them (as ``fields`` does). Nil when the entity did not carry it
    /// (or, typed, does not declare it).
    public func field(_ key: String) -> JSONValue? { draft.fieldValue(key) }
}

/// Code the store runs around writes of new data: ingests, upserts and
/// ``Store/commit(_:alongside:)``. Removals and the maintenance writes (restore,
/// upgradeRecords) run none. See <doc:WritingToTheStore>.
///
/// A hook must not write to the store it belongs to (such a write throws
/// ``StoreWriteError/Code-swift.struct/writeInsideCommit``).
public struct StoreHooks: Sendable {
    /// Whether to store an incoming entity at all (called by the ingestor as its object ends).
    /// An entity turned away is not stored and appears in no collection.
    public var condition: (@Sendable (IncomingEntity) -> Bool)?
    /// Called for each entity of a write just before it is committed (before the commit takes
    /// the store's writer lock).
    public var beforeStore: (@Sendable (IncomingEntity) -> Void)?
    /// Called for each record a write inserted or changed, once the commit is in place and
    /// before observers hear of it; commits run their hooks one after the other, in commit order.
    public var afterStore: (@Sendable (EntityRecord) -> Void)?

    /// Hooks; all optional.
    public init(
        condition: (@Sendable (IncomingEntity) -> Bool)? = nil,
        beforeStore: (@Sendable (IncomingEntity) -> Void)? = nil,
        afterStore: (@Sendable (EntityRecord) -> Void)? = nil
    ) {
        self.condition = condition
        self.beforeStore = beforeStore
        self.afterStore = afterStore
    }
}
