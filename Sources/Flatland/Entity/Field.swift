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
    let decode: @Sendable (inout FieldReader, inout Root) throws(FieldError) -> Void
    let encode: @Sendable (Root, inout JSONWriter) -> Void
    /// Copies this field's value from the first record into the second.
    let copy: @Sendable (Root, inout Root) -> Void
    /// Whether two records hold the same value in this field.
    let equal: @Sendable (Root, Root) -> Bool
    let keyPath: PartialKeyPath<Root> & Sendable

    /// Declares that JSON key `key` fills the property at `keyPath`.
    public init<Value: FieldValue>(_ key: String, _ keyPath: WritableKeyPath<Root, Value> & Sendable) {
        self.key = key
        self.keyPath = keyPath
        decode = { (reader, root) throws(FieldError) in root[keyPath: keyPath] = try Value.decode(from: &reader) }
        encode = { root, writer in root[keyPath: keyPath].encode(to: &writer) }
        copy = { source, destination in destination[keyPath: keyPath] = source[keyPath: keyPath] }
        equal = { a, b in a[keyPath: keyPath] == b[keyPath: keyPath] }
    }
}
