@_spi(FlatlandInternal) import FlatlandJSON

/// Maps id prefixes to entity types. Filled explicitly: there is no runtime scanning.
///
/// ```swift
/// var registry = EntityRegistry()
/// try registry.register(User.self)
/// try registry.register(Device.self)
/// ```
public struct EntityRegistry: Sendable {
    var types: [String: EntityType] = [:]

    /// An empty registry: every entity is untyped until its type is registered.
    public init() {}

    /// A registry with these types.
    public init(_ types: [any Entity.Type]) throws(RegistryError) {
        for type in types { try register(type) }
    }

    /// Registers `type` under its prefix.
    /// - Throws: ``RegistryError`` when the prefix is taken or malformed, or the type declares
    ///   too many fields or the same key twice.
    public mutating func register<E: Entity>(_ type: E.Type) throws(RegistryError) { try add(type) }

    private mutating func add<E: Entity>(_ type: E.Type) throws(RegistryError) {
        let prefix = E.prefix
        guard EntityIDFormat.prefix(of: prefix + "-x") == prefix else {
            throw RegistryError("prefix \"\(prefix)\" of \(E.self) must match [a-z][a-z0-9]*")
        }
        if let existing = types[prefix] {
            throw RegistryError("prefix \"\(prefix)\" of \(E.self) is already registered for \(existing.typeName)")
        }
        let fields = E.fields
        guard fields.count <= FieldSet.capacity else {
            throw RegistryError("\(E.self) declares \(fields.count) fields; at most \(FieldSet.capacity) are allowed")
        }
        var seen = Set<String>()
        for field in fields where !seen.insert(field.key).inserted {
            throw RegistryError("\(E.self) declares the key \"\(field.key)\" twice")
        }
        types[prefix] = TypedEntityType<E>()
    }

    /// Registers an existential entity type.
    public mutating func register(_ type: any Entity.Type) throws(RegistryError) {
        func open<E: Entity>(_ t: E.Type, _ registry: inout EntityRegistry) throws(RegistryError) {
            try registry.add(t)
        }
        try open(type, &self)
    }

    /// Whether a type is registered for `prefix`.
    public func contains(prefix: String) -> Bool { types[prefix] != nil }

    /// The registered prefixes, sorted.
    public var prefixes: [String] { types.keys.sorted() }

    func type(forPrefix prefix: String) -> EntityType? { types[prefix] }
}

/// A registration that cannot be made: a duplicate or malformed prefix, or a bad declaration.
public struct RegistryError: Error, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Type-erased operations on one registered entity type. Immutable once made.
class EntityType: @unchecked Sendable {
    let prefix: String
    /// ``prefix`` as UTF-8.
    let prefixBytes: [UInt8]
    let typeName: String
    let fieldKeys: [String]
    /// The field keys' UTF-8, one after another, and where each starts (`count + 1` offsets):
    /// matching a key reads one buffer, not an array per key.
    private let fieldKeyBytes: UnsafeMutableRawBufferPointer
    /// Each key's start in ``fieldKeyBytes`` and its length.
    private let fieldKeySpans: UnsafeMutableBufferPointer<(start: Int, count: Int)>
    /// Field indexes by key (``fieldIndex(_:hint:)``).
    private let fieldTable: UnsafeMutableBufferPointer<Int32>
    private let fieldTableMask: Int
    let dataVersionKey: String?
    /// ``dataVersionKey`` as UTF-8, for comparing keys without allocating.
    let dataVersionKeyBytes: [UInt8]?
    let classVersion: Int
    /// The fields' decoders (and comparisons and copies), each in a box of its own, unretained
    /// (`ownedFieldBoxes` keeps them): called through a borrowed box, a decoder runs without
    /// its context retained and released around every value, as it is when called out of an
    /// array.
    let fieldBoxes: UnsafeMutablePointer<Unretained<FieldBox>>
    private let ownedFieldBoxes: [FieldBox]
    /// `prefix.name` of each secondary index, made once.
    let indexKeys: [String]
    /// Each index's reader, boxed like the field decoders (see ``FieldBox``), in an array
    /// whose type does not depend on the entity type.
    let indexValues: [IndexReaderBox]
    /// Whether the type declares secondary indexes.
    var hasIndexes: Bool { !indexKeys.isEmpty }
    /// The fields whose values the secondary indexes read: writing any other field leaves every
    /// index value of a record as it was.
    let fieldsReadByIndexes: FieldSet
    /// The entity's Swift type: the layout of a typed box's storage.
    let recordType: Any.Type
    /// Where a box of this type keeps the record's value, from the start of the box (typed
    /// types; set once, when the type is made).
    fileprivate(set) var valueOffset = 0

    init(
        prefix: String, typeName: String, fieldKeys: [String], dataVersionKey: String?, classVersion: Int,
        recordType: Any.Type, fields: [FieldBox], indexKeys: [String],
        indexValues: [IndexReaderBox], fieldsReadByIndexes: FieldSet = FieldSet()
    ) {
        self.recordType = recordType
        self.fieldsReadByIndexes = fieldsReadByIndexes
        ownedFieldBoxes = fields
        fieldBoxes = .allocate(capacity: max(1, fields.count))
        fieldBoxes.initialize(from: fields.map { Unretained($0) }, count: fields.count)
        self.indexKeys = indexKeys
        self.indexValues = indexValues
        self.prefix = prefix
        self.prefixBytes = Array(prefix.utf8)
        self.typeName = typeName
        self.fieldKeys = fieldKeys
        fieldKeySpans = .allocate(capacity: max(1, fieldKeys.count))
        var total = 0
        for (i, key) in fieldKeys.enumerated() {
            fieldKeySpans[i] = (start: total, count: key.utf8.count)
            total += key.utf8.count
        }
        fieldKeyBytes = .allocate(byteCount: max(1, total), alignment: 1)
        for (i, key) in fieldKeys.enumerated() {
            let span = fieldKeySpans[i]
            UnsafeMutableRawBufferPointer(rebasing: fieldKeyBytes[span.start..<span.start + span.count]).copyBytes(
                from: key.utf8)
        }
        (fieldTable, fieldTableMask) = Self.makeFieldTable(fieldKeys)
        self.dataVersionKey = dataVersionKey
        self.dataVersionKeyBytes = dataVersionKey.map { Array($0.utf8) }
        self.classVersion = classVersion
    }

    deinit {
        fieldKeyBytes.deallocate()
        fieldKeySpans.deallocate()
        fieldTable.deallocate()
        fieldBoxes.deinitialize(count: ownedFieldBoxes.count)
        fieldBoxes.deallocate()
    }

    /// Whether `id` (UTF-8) is `<this prefix>-<something>`, the form ``EntityIDFormat`` accepts.
    final func isPrefix(ofID id: UnsafeRawBufferPointer) -> Bool {
        let n = prefixBytes.count
        guard id.count > n + 1, id[n] == UInt8(ascii: "-") else { return false }
        return prefixBytes.withUnsafeBytes {
            JSONBytes(unsafeBuffer: UnsafeRawBufferPointer(rebasing: id[0..<n])).equals($0)
        }
    }

    /// The index of the field named `key`; `hint` is tried first (fields tend to come in order),
    /// then the table of field keys, so a key the type does not declare costs one probe or two,
    /// not a comparison with every field.
    final func fieldIndex(_ key: JSONBytes, hint: Int) -> Int? {
        if hint < fieldKeys.count, matches(key, hint) { return hint }
        let table = fieldTable.baseAddress.unsafelyUnwrapped
        var slot = Self.keySlot(key.buffer, mask: fieldTableMask)
        while true {
            let i = Int(table[slot])
            if i < 0 { return nil }
            if matches(key, i) { return i }
            slot = (slot &+ 1) & fieldTableMask
        }
    }

    /// Where a key's search starts in the field table: from its length and three of its bytes.
    @inline(__always)
    private static func keySlot(_ key: UnsafeRawBufferPointer, mask: Int) -> Int {
        let n = key.count
        var h = UInt64(truncatingIfNeeded: n) &* 0x9E37_79B9_7F4A_7C15
        if n > 0 {
            h ^= UInt64(key[0]) | UInt64(key[n &- 1]) &<< 8 | UInt64(key[n &>> 1]) &<< 16
            h &*= 0xBF58_476D_1CE4_E5B9
        }
        return Int(truncatingIfNeeded: h &>> 40) & mask
    }

    /// Open addressing over the field keys: each slot holds a field index, or -1.
    private static func makeFieldTable(_ keys: [String]) -> (UnsafeMutableBufferPointer<Int32>, mask: Int) {
        var size = 8
        while size < keys.count * 2 { size *= 2 }
        let table = UnsafeMutableBufferPointer<Int32>.allocate(capacity: size)
        table.initialize(repeating: -1)
        for (i, key) in keys.enumerated() {
            var slot = Array(key.utf8).withUnsafeBytes { keySlot($0, mask: size - 1) }
            while table[slot] >= 0 { slot = (slot + 1) & (size - 1) }
            table[slot] = Int32(i)
        }
        return (table, size - 1)
    }

    @inline(__always)
    private final func matches(_ key: JSONBytes, _ i: Int) -> Bool {
        let span = fieldKeySpans.baseAddress.unsafelyUnwrapped[i]
        guard span.count == key.count else { return false }
        let a = UnsafeRawPointer(fieldKeyBytes.baseAddress.unsafelyUnwrapped) + span.start
        guard let b = key.buffer.baseAddress else { return span.count == 0 }
        // Eight bytes at a time, then the rest.
        var j = 0
        while j &+ 8 <= span.count {
            if a.loadUnaligned(fromByteOffset: j, as: UInt64.self)
                != b.loadUnaligned(fromByteOffset: j, as: UInt64.self)
            {
                return false
            }
            j &+= 8
        }
        while j < span.count {
            if a.load(fromByteOffset: j, as: UInt8.self) != b.load(fromByteOffset: j, as: UInt8.self) { return false }
            j &+= 1
        }
        return true
    }

    /// Whether declared field `i` (any index) is named `key`.
    @inline(__always)
    final func isField(_ i: Int, named key: UnsafeRawBufferPointer) -> Bool {
        i < fieldKeys.count && matches(JSONBytes(unsafeBuffer: key), i)
    }

    /// An empty draft for an entity with this id.
    func makeDraft(key: RecordKey) -> EntityBox { fatalError("abstract") }
    /// A record from stored JSON fields (persistence), migrated from `classVersion` if older.
    func decodeRecord(id: String, fields: JSONObject, classVersion: Int, dataVersion: Double?) throws -> EntityBox {
        fatalError("abstract")
    }
    /// The secondary index entries of a record: the index's store key and the value.
    func indexEntries(_ box: EntityBox) -> [(key: String, value: IndexValue)] {
        var entries: [(key: String, value: IndexValue)] = []
        forEachIndexEntry(of: box) { entries.append((key: $0, value: $1)) }
        return entries
    }

    /// Calls `body` with each secondary index entry of a record of this type: the index's store
    /// key and the value.
    final func forEachIndexEntry(of box: EntityBox, _ body: (String, IndexValue) -> Void) {
        guard let boxType = box.type, boxType.recordType == recordType else { return }
        let storage = UnsafeRawPointer(box.valueStorage(type: boxType))
        for i in indexKeys.indices { body(indexKeys[i], indexValues[i].read(storage)) }
    }
}

final class TypedEntityType<E: Entity>: EntityType, @unchecked Sendable {
    let fields: [Field<E>]
    /// The box class, looked up once.
    let boxClass: TypedBox<E>.Type

    init() {
        boxClass = TypedBox<E>.self
        fields = E.fields
        super.init(
            prefix: E.prefix, typeName: "\(E.self)", fieldKeys: E.fields.map(\.key), dataVersionKey: E.dataVersionKey,
            classVersion: E.classVersion, recordType: E.self,
            fields: E.fields.map { FieldBox($0.accessor) },
            indexKeys: E.indexes.map { "\(E.prefix).\($0.name)" },
            indexValues: E.indexes.map { IndexReaderBox($0.value) },
            fieldsReadByIndexes: Self.fieldsRead(by: E.indexes, of: E.fields))
        valueOffset = TypedBox<E>(key: RecordKey(E.prefix + "-"), type: self).valueOffset
    }

    /// The fields whose stored bytes overlap the bytes an index reads. A field or an index that
    /// goes through a computed property may touch anything: with one, every field counts. (A
    /// property of no size overlaps nothing, and cannot change an index.)
    private static func fieldsRead(by indexes: [EntityIndex<E>], of fields: [Field<E>]) -> FieldSet {
        var read = FieldSet()
        guard !indexes.isEmpty else { return read }
        for (i, field) in fields.enumerated()
        where indexes.contains(where: { index in
            guard let written = field.storedBytes, let indexed = index.storedBytes else { return true }
            return written.overlaps(indexed)
        }) {
            read.insert(i)
        }
        return read
    }

    override func makeDraft(key: RecordKey) -> EntityBox { boxClass.init(key: key, type: self) }

    override func decodeRecord(id: String, fields object: JSONObject, classVersion: Int, dataVersion: Double?) throws
        -> EntityBox
    {
        var object = object
        if classVersion < E.classVersion { try E.migrate(&object, from: classVersion) }
        let box = TypedBox<E>(key: RecordKey(id), type: self)
        box.dataVersion = dataVersion
        var tape = EventTape()
        for member in object.members {
            guard let index = fieldKeys.firstIndex(of: member.key) else { continue }
            tape.removeAll()
            record(member.value, into: &tape)
            try tape.withReader(from: EventTape.Mark(tokens: 0, bytes: 0)) { (reader) throws(FieldError) in
                try box.decode(field: index, from: &reader)
            }
        }
        return box
    }
}

/// Records a ``JSONValue`` as tape tokens, so stored JSON decodes through the same field code.
func record(_ value: JSONValue, into tape: inout EventTape) {
    switch value {
    case .null: tape.append(.null)
    case .bool(let b): tape.append(b ? .true : .false)
    case .number(let n): tape.append(.number, n.text)
    case .string(let s): tape.append(.string, s)
    case .array(let items):
        tape.append(.beginArray)
        for item in items { record(item, into: &tape) }
        tape.append(.endArray)
    case .object(let object):
        tape.append(.beginObject)
        for member in object.members {
            tape.append(.key, member.key)
            record(member.value, into: &tape)
        }
        tape.append(.endObject)
    }
}

/// One index's reader, boxed for the same reason as ``FieldBox``.
final class IndexReaderBox: Sendable {
    let read: IndexValueReader
    init(_ read: @escaping IndexValueReader) { self.read = read }
}

/// One field's operations on records by pointer, boxed so that they can be reached unretained
/// and without the metadata of the entity's `Field` type. (Boxed straight from the field,
/// never kept in an array of closures: an array keeps a function value in its most general
/// form, and each call would then go through two reabstraction thunks.)
final class FieldBox: Sendable {
    let decode: RawFieldDecoder
    let equal: RawFieldEqual
    let copy: RawFieldCopy
    let encode: RawFieldEncoder
    init<Root>(_ accessor: FieldAccessor<Root>) {
        decode = accessor.rawDecode
        equal = accessor.rawEqual
        copy = accessor.rawCopy
        encode = accessor.rawEncode
    }
}
