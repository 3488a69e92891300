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
    @usableFromInline let accessor: FieldAccessor<Root>
    var keyPath: PartialKeyPath<Root> & Sendable { accessor.keyPath }
    /// The bytes of a record the property is stored in; nil for a computed property.
    @usableFromInline let storedBytes: Range<Int>?

    /// Declares that JSON key `key` fills the property at `keyPath`.
    ///
    /// The accessors are made here, in the module that declares the entity, so they are
    /// compiled for the concrete property type rather than through generic witnesses. A stored
    /// property is written in place at its offset in the record; any other writable key path (a
    /// computed property with a setter, say) works too, through the key path.
    @inlinable
    public init<Value: FieldValue>(_ key: String, _ keyPath: WritableKeyPath<Root, Value> & Sendable) {
        self.key = key
        let rawDecode: RawFieldDecoder
        let rawEqual: RawFieldEqual
        let rawCopy: RawFieldCopy
        let rawEncode: RawFieldEncoder
        let offset = MemoryLayout<Root>.offset(of: keyPath)
        storedBytes = offset.map { $0..<$0 + MemoryLayout<Value>.size }
        if let offset {
            // A stored property of a struct: read and written in place at its offset, without
            // walking the key path at run time for every value.
            rawDecode = { (reader, root) throws(FieldError) in
                try Value.decode(from: &reader, updating: &(root + offset).assumingMemoryBound(to: Value.self).pointee)
            }
            rawEqual = { a, b in
                (a + offset).assumingMemoryBound(to: Value.self).pointee
                    == (b + offset).assumingMemoryBound(to: Value.self).pointee
            }
            rawCopy = { source, destination in
                (destination + offset).assumingMemoryBound(to: Value.self).pointee =
                    (source + offset).assumingMemoryBound(to: Value.self).pointee
            }
            rawEncode = { root, writer in
                (root + offset).assumingMemoryBound(to: Value.self).pointee.encode(to: &writer)
            }
        } else {
            rawDecode = { (reader, root) throws(FieldError) in
                try Value.decode(
                    from: &reader, updating: &root.assumingMemoryBound(to: Root.self).pointee[keyPath: keyPath])
            }
            rawEqual = { a, b in
                a.assumingMemoryBound(to: Root.self).pointee[keyPath: keyPath]
                    == b.assumingMemoryBound(to: Root.self).pointee[keyPath: keyPath]
            }
            rawCopy = { source, destination in
                destination.assumingMemoryBound(to: Root.self).pointee[keyPath: keyPath] =
                    source.assumingMemoryBound(to: Root.self).pointee[keyPath: keyPath]
            }
            rawEncode = { root, writer in
                root.assumingMemoryBound(to: Root.self).pointee[keyPath: keyPath].encode(to: &writer)
            }
        }
        accessor = FieldAccessor(
            keyPath: keyPath,
            decode: { (reader, root) throws(FieldError) in root[keyPath: keyPath] = try Value.decode(from: &reader) },
            encode: { root, writer in root[keyPath: keyPath].encode(to: &writer) },
            rawDecode: rawDecode, rawEqual: rawEqual, rawCopy: rawCopy, rawEncode: rawEncode)
    }

    @inline(__always)
    func decode(_ reader: inout FieldReader, _ root: inout Root) throws(FieldError) {
        try accessor.decode(&reader, &root)
    }
    @inline(__always)
    func encode(_ root: Root, _ writer: inout JSONWriter) { accessor.encode(root, &writer) }
}

/// How one field reads and writes its property: one object per field, so copying a `Field`
/// costs one reference, not one per operation.
@usableFromInline
final class FieldAccessor<Root>: Sendable {
    let keyPath: PartialKeyPath<Root> & Sendable
    let decode: @Sendable (inout FieldReader, inout Root) throws(FieldError) -> Void
    let encode: @Sendable (Root, inout JSONWriter) -> Void
    /// ``decode`` on a pointer to the record, so generic code can call it without needing the
    /// metadata of `Field<Root>`.
    let rawDecode: RawFieldDecoder
    /// Whether two records (by pointer) hold the same value in this field.
    let rawEqual: RawFieldEqual
    /// Copies this field's value between two records (by pointer).
    let rawCopy: RawFieldCopy
    /// Writes this field's value of a record (by pointer): read in place, without copying the
    /// record or walking the key path.
    let rawEncode: RawFieldEncoder

    @usableFromInline
    init(
        keyPath: PartialKeyPath<Root> & Sendable,
        decode: @escaping @Sendable (inout FieldReader, inout Root) throws(FieldError) -> Void,
        encode: @escaping @Sendable (Root, inout JSONWriter) -> Void,
        rawDecode: @escaping RawFieldDecoder,
        rawEqual: @escaping RawFieldEqual,
        rawCopy: @escaping RawFieldCopy,
        rawEncode: @escaping RawFieldEncoder
    ) {
        self.keyPath = keyPath
        self.decode = decode
        self.encode = encode
        self.rawDecode = rawDecode
        self.rawEqual = rawEqual
        self.rawCopy = rawCopy
        self.rawEncode = rawEncode
    }
}

/// Decodes one field into the record at the pointer.
@usableFromInline
typealias RawFieldDecoder = @Sendable (inout FieldReader, UnsafeMutableRawPointer) throws(FieldError) -> Void

/// Whether the records at the two pointers hold the same value in one field.
@usableFromInline
typealias RawFieldEqual = @Sendable (UnsafeRawPointer, UnsafeRawPointer) -> Bool

/// Copies one field's value from the record at the first pointer into the record at the second.
@usableFromInline
typealias RawFieldCopy = @Sendable (UnsafeRawPointer, UnsafeMutableRawPointer) -> Void

/// Writes one field's value of the record at the pointer.
@usableFromInline
typealias RawFieldEncoder = @Sendable (UnsafeRawPointer, inout JSONWriter) -> Void
