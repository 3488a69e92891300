import FlatlandJSON

/// A server entity: the one protocol every entity type conforms to.
///
/// An entity is a `Sendable` value with a typed id whose prefix names its type. Entities hold
/// other entities by id only; the store keeps one record per id. Declaring a type takes a few
/// lines:
///
/// ```swift
/// struct User: Entity {
///     static let prefix = "u"
///     var id: EntityID<User>
///     var firstname = ""
///     var age: Int? = nil
///     var friends: [EntityID<User>] = []
///     init(id: EntityID<User>) { self.id = id }
///     static let fields: [Field<User>] = [
///         Field("firstname", \.firstname),
///         Field("age", \.age),
///         Field("friends", \.friends),
///     ]
/// }
/// ```
///
/// Properties need default values: a response may carry only some fields, and the record keeps
/// track of which it has (``EntityRecord/presentFields``).
public protocol Entity: Sendable {
    /// The id prefix that names this type: `"u"` for `u-lQ7tSlU4…`.
    static var prefix: String { get }
    /// The declared JSON fields (not the id).
    static var fields: [Field<Self>] { get }
    /// The schema version of this type's records; raise it when a field changes meaning, and
    /// upgrade older records in ``migrate(_:from:)``. Defaults to 1.
    static var classVersion: Int { get }
    /// The JSON key whose number is the record's data version, if the type has one; an incoming
    /// record whose version is not newer than the stored one is skipped. Defaults to nil (the
    /// ingest options may name one for every type).
    static var dataVersionKey: String? { get }
    /// Secondary indexes the store keeps for this type. Defaults to none.
    static var indexes: [EntityIndex<Self>] { get }
    /// Upgrades the stored fields of a record written under `classVersion` to this version.
    static func migrate(_ fields: inout JSONObject, from classVersion: Int) throws
    /// The record's id.
    var id: EntityID<Self> { get set }
    /// A record with this id and every other property at its default.
    init(id: EntityID<Self>)
}

extension Entity {
    public static var classVersion: Int { 1 }
    public static var dataVersionKey: String? { nil }
    public static var indexes: [EntityIndex<Self>] { [] }
    public static func migrate(_ fields: inout JSONObject, from classVersion: Int) throws {}
}

/// A secondary index on one field of an entity type: `users where email == x` without a scan.
///
/// String values match when their UTF-8 bytes are the same, in memory as in SQLite: `"zo\u{EB}"`
/// and `"zoe\u{308}"`, which Swift's `String` calls equal, are two values. Normalize both sides
/// yourself where the server may send either spelling.
///
/// The key path may name a stored property, or a computed one (a full name made of two fields):
/// a record's index value is worked out again when a field it may depend on changes, which for a
/// computed property is any field.
public struct EntityIndex<E: Entity>: Sendable {
    /// The index's name, unique within the type.
    public let name: String
    @usableFromInline let keyPath: PartialKeyPath<E> & Sendable
    /// The indexed value of the record at the pointer.
    @usableFromInline let value: IndexValueReader
    /// The bytes of a record the property is stored in; nil for a computed property.
    @usableFromInline let storedBytes: Range<Int>?

    /// Indexes the values of the property at `keyPath`.
    ///
    /// The reader is made here, in the module that declares the entity, so it is compiled for
    /// the concrete property type.
    @inlinable
    public init<Value: Hashable & Sendable>(_ name: String, _ keyPath: KeyPath<E, Value> & Sendable) {
        self.name = name
        self.keyPath = keyPath
        let offset = MemoryLayout<E>.offset(of: keyPath)
        storedBytes = offset.map { $0..<$0 + MemoryLayout<Value>.size }
        if let offset {
            // A stored property: read in place (see ``Field``).
            value = { record in IndexValue((record + offset).assumingMemoryBound(to: Value.self).pointee) }
        } else {
            value = { record in IndexValue(record.assumingMemoryBound(to: E.self).pointee[keyPath: keyPath]) }
        }
    }
}

/// Reads an indexed property from the record at the pointer.
@usableFromInline
typealias IndexValueReader = @Sendable (UnsafeRawPointer) -> IndexValue
