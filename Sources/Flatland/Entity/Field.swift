import FlatlandJSON

/// One declared field: a JSON key and the property it fills.
///
/// ```swift
/// static let fields: [Field<User>] = [
///     Field("firstname", \.firstname),
///     Field("age", \.age),
///     Field("friends", \.friends),
/// ]
/// ```
public struct Field<Root>: Sendable {
    /// The JSON key.
    public let key: String
    let accessor: FieldAccessor<Root>
    var keyPath: PartialKeyPath<Root> & Sendable { accessor.partialKeyPath }

    /// Declares that JSON key `key` fills the property at `keyPath`.
    public init<Value: FieldValue>(_ key: String, _ keyPath: WritableKeyPath<Root, Value> & Sendable) {
        self.key = key
        accessor = KeyPathAccessor(keyPath)
    }

    @inline(__always)
    func decode(_ reader: inout FieldReader, _ root: inout Root) throws(FieldError) {
        try accessor.decode(&reader, &root)
    }
    @inline(__always)
    func encode(_ root: Root, _ writer: inout JSONWriter) { accessor.encode(root, &writer) }
    /// Copies this field's value from the first record into the second.
    @inline(__always)
    func copy(_ source: Root, _ destination: inout Root) { accessor.copy(source, &destination) }
    /// Whether two records hold the same value in this field.
    @inline(__always)
    func equal(_ a: Root, _ b: Root) -> Bool { accessor.equal(a, b) }
}

/// How one field reads and writes its property: one object per field, so copying a `Field`
/// costs one reference, not one per operation.
class FieldAccessor<Root>: @unchecked Sendable {
    var partialKeyPath: PartialKeyPath<Root> & Sendable { fatalError("abstract") }
    func decode(_ reader: inout FieldReader, _ root: inout Root) throws(FieldError) {}
    func encode(_ root: Root, _ writer: inout JSONWriter) {}
    func copy(_ source: Root, _ destination: inout Root) {}
    func equal(_ a: Root, _ b: Root) -> Bool { true }
}

final class KeyPathAccessor<Root, Value: FieldValue>: FieldAccessor<Root>, @unchecked Sendable {
    let keyPath: WritableKeyPath<Root, Value> & Sendable

    init(_ keyPath: WritableKeyPath<Root, Value> & Sendable) { self.keyPath = keyPath }

    override var partialKeyPath: PartialKeyPath<Root> & Sendable { keyPath }
    override func decode(_ reader: inout FieldReader, _ root: inout Root) throws(FieldError) {
        root[keyPath: keyPath] = try Value.decode(from: &reader)
    }
    override func encode(_ root: Root, _ writer: inout JSONWriter) { root[keyPath: keyPath].encode(to: &writer) }
    override func copy(_ source: Root, _ destination: inout Root) {
        destination[keyPath: keyPath] = source[keyPath: keyPath]
    }
    override func equal(_ a: Root, _ b: Root) -> Bool { a[keyPath: keyPath] == b[keyPath: keyPath] }
}
