@_spi(FlatlandInternal) import FlatlandJSON

/// One entity's data: a response's draft while the response streams, then, once applied, the
/// store's record. A stored box is never mutated again (an update stores a new box), so
/// snapshots and readers can share boxes without copying.
class EntityBox: @unchecked Sendable {
    final let key: RecordKey
    final var id: String { key.id }
    /// The registered type, for typed boxes.
    final let type: EntityType?
    /// The registered type's identity, for comparing types without retaining one.
    final var typeIdentifier: ObjectIdentifier? { type.map { ObjectIdentifier($0) } }
    /// Typed boxes: which declared fields (by index) are present.
    var present = FieldSet()
    var dataVersion: Double?
    var classVersion: Int
    /// Drafts: an object of the response is being decoded into this draft.
    var isOpen = false
    /// Drafts: the data version the store held when the response first needed it.
    private var stored: Double??

    /// The store's data version for this id, asked once.
    func storedVersion(_ load: () -> Double?) -> Double? {
        if let stored { return stored }
        let version = load()
        stored = .some(version)
        return version
    }

    init(key: RecordKey, classVersion: Int, type: EntityType?) {
        self.key = key
        self.classVersion = classVersion
        self.type = type
    }

    var prefix: String { fatalError("abstract") }
    /// The entity as an existential (typed) or its fields (untyped).
    var payload: EntityRecord.Payload { fatalError("abstract") }
    /// The JSON keys of the present fields.
    var presentKeys: [String] { [] }

    /// Decodes declared field `index` (typed boxes) straight into the record: no generic code
    /// runs here, only the field's own decoder, compiled for its property.
    @inline(__always)
    final func decode(field index: Int, from reader: inout FieldReader) throws(FieldError) {
        guard let type else { return }
        try decode(field: index, from: &reader, type: type)
    }

    /// ``decode(field:from:)`` with the box's type at hand (the ingestor keeps it unretained).
    @inline(__always)
    final func decode(field index: Int, from reader: inout FieldReader, type: EntityType) throws(FieldError) {
        let storage = valueStorage(type: type)
        var failure: FieldError?
        type.fieldBoxes[index].with { box in
            do throws(FieldError) { try box.decode(&reader, storage) } catch { failure = error }
        }
        if let failure { throw failure }
        present.insert(index)
    }

    /// Typed boxes: the address of the record's value, inside this box (`type` is the box's
    /// type). Valid while the box lives; it is never moved.
    @inline(__always)
    final func valueStorage(type: EntityType) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(Unretained(self).address) + type.valueOffset
    }
    /// Sets a member (untyped boxes).
    func set(member key: String, value: JSONValue) {}
    /// Sets member `key` to the value `reader` is at (untyped boxes), and moves the reader past it.
    func append(member key: String, from reader: inout FieldReader) throws(FieldError) {
        set(member: key, value: try reader.readJSONValue(untyped: true))
    }
    /// Folds a later draft of the same entity into this draft: its fields win, except that a
    /// draft without a data version only adds fields to one that has a version (see
    /// ``fillsOnly(from:)``).
    func absorb(_ other: EntityBox) {}

    /// Whether `draft` may only add fields this box lacks: it carries no data version and this
    /// box has one. An object without a version cannot be shown newer than a versioned record
    /// (an entity embedded in another response, a server that left the version out), so it
    /// never overwrites what the record holds; it can still complete a record that lacks fields.
    @inline(__always)
    final func fillsOnly(from draft: EntityBox) -> Bool { draft.dataVersion == nil && dataVersion != nil }
    /// A new box: this record with `draft`'s fields applied, and the keys whose values changed.
    func merged(with draft: EntityBox) -> (box: EntityBox, changed: [String]) { fatalError("abstract") }
    /// The present fields as JSON.
    func writeFields(to writer: inout JSONWriter) {}
    /// Declared field `index` (typed boxes), key and value, as a member of an object begun.
    func writeField(_ index: Int, to writer: inout JSONWriter) {}
}

final class TypedBox<E: Entity>: EntityBox, @unchecked Sendable {
    /// The record, in the box's own allocation: field decoders write into it in place. A draft
    /// is written by one ingest at a time and a stored box never again, so no access to it can
    /// overlap another.
    @exclusivity(unchecked) private(set) var value: E
    var entityType: TypedEntityType<E> { unsafeDowncast(type.unsafelyUnwrapped, to: TypedEntityType<E>.self) }

    required init(key: RecordKey, type: TypedEntityType<E>) {
        value = E(id: EntityID(key.id))
        super.init(key: key, classVersion: E.classVersion, type: type)
    }

    init(value: E, present: FieldSet, dataVersion: Double?, type: TypedEntityType<E>) {
        self.value = value
        super.init(key: RecordKey(value.id.rawValue), classVersion: E.classVersion, type: type)
        self.present = present
        self.dataVersion = dataVersion
    }

    /// Where `value` sits from the start of the box: the same for every box of this class,
    /// measured once by the entity's type (``EntityBox/valueStorage(type:)``).
    var valueOffset: Int {
        withUnsafeMutablePointer(to: &value) {
            UnsafeRawPointer(Unretained(self).address).distance(to: UnsafeRawPointer($0))
        }
    }

    override var prefix: String { E.prefix }
    override var payload: EntityRecord.Payload { .typed(value) }
    override var presentKeys: [String] { present.indexes.map { entityType.fieldKeys[$0] } }

    override func absorb(_ other: EntityBox) {
        guard let other = other as? TypedBox<E> else { return }
        let type = entityType
        let source = UnsafeRawPointer(other.valueStorage(type: type))
        let destination = valueStorage(type: type)
        let fillOnly = fillsOnly(from: other)
        other.present.forEach { i in
            if fillOnly, present.contains(i) { return }
            type.fieldBoxes[i].with { $0.copy(source, destination) }
        }
        present.formUnion(other.present)
        if let v = other.dataVersion { dataVersion = v }
    }

    override func merged(with draft: EntityBox) -> (box: EntityBox, changed: [String]) {
        guard let draft = draft as? TypedBox<E> else { return (draft, draft.presentKeys) }
        // (Through the type's boxed operations, not `[Field<E>]`: this class is generic, and
        // every element of that array would ask the runtime for `Field<E>`'s metadata.)
        let type = entityType
        let incoming = UnsafeRawPointer(draft.valueStorage(type: type))
        let current = UnsafeRawPointer(valueStorage(type: type))
        var changed = FieldSet()
        let fillOnly = fillsOnly(from: draft)
        draft.present.forEach { i in
            if !present.contains(i)
                || (!fillOnly && !type.fieldBoxes[i].with({ $0.equal(incoming, current) }))
            {
                changed.insert(i)
            }
        }
        let version = draft.dataVersion ?? dataVersion
        // Nothing new (a response that repeats what the store holds): this record stays as it
        // is, with no box made and no value copied.
        if changed.isEmpty && version == dataVersion { return (self, []) }
        var next = value
        withUnsafeMutablePointer(to: &next) { p in
            let destination = UnsafeMutableRawPointer(p)
            changed.forEach { i in type.fieldBoxes[i].with { $0.copy(incoming, destination) } }
        }
        var nextPresent = present
        nextPresent.formUnion(draft.present)
        let box = TypedBox(value: next, present: nextPresent, dataVersion: version, type: type)
        var keys: [String] = []
        keys.reserveCapacity(changed.count)
        changed.forEach { keys.append(type.fieldKeys[$0]) }
        return (box, keys)
    }

    override func writeFields(to writer: inout JSONWriter) {
        // Through the type's boxed operations on the value in place (as `merged(with:)`): going
        // through `[Field<E>]` asked the runtime for `Field<E>`'s metadata and copied the whole
        // record for every field, most of what writing a record cost.
        let type = entityType
        let storage = UnsafeRawPointer(valueStorage(type: type))
        present.forEach { i in
            writer.key(type.fieldKeys[i])
            type.fieldBoxes[i].with { $0.encode(storage, &writer) }
        }
    }

    override func writeField(_ index: Int, to writer: inout JSONWriter) {
        let type = entityType
        let storage = UnsafeRawPointer(valueStorage(type: type))
        writer.key(type.fieldKeys[index])
        type.fieldBoxes[index].with { $0.encode(storage, &writer) }
    }
}

/// An untyped entity: its fields as JSON. While the ingest reads it, and once stored, the
/// fields are kept as the members' tokens (``UntypedMembers``) and built into a ``JSONObject``
/// each time they are read; a box whose fields were set as an object (a record loaded from
/// disk, a merge) keeps that object. A stored box is never mutated, so reading never writes.
final class UntypedBox: EntityBox, @unchecked Sendable {
    let entityPrefix: String
    /// The members as read, while ``object`` is nil.
    private var members = UntypedMembers()
    /// The fields, once set as an object.
    private var object: JSONObject?

    init(key: RecordKey, prefix: String) {
        entityPrefix = prefix
        super.init(key: key, classVersion: 1, type: nil)
    }

    /// The fields, in the order they arrived.
    var fields: JSONObject {
        get { object ?? members.object() }
        set {
            object = newValue
            members = UntypedMembers()
        }
    }

    override var prefix: String { entityPrefix }
    override var payload: EntityRecord.Payload { .untyped(fields) }
    override var presentKeys: [String] { object?.keys ?? members.keys() }

    /// The value of one field, read alone (the last of that name, as in ``fields``).
    func field(_ key: String) -> JSONValue? { object.map { $0[key] } ?? members.value(forKey: key) }

    override func set(member key: String, value: JSONValue) {
        var fields = self.fields
        fields[key] = value
        self.fields = fields
    }

    override func append(member key: String, from reader: inout FieldReader) throws(FieldError) {
        guard object == nil else { return set(member: key, value: try reader.readJSONValue(untyped: true)) }
        try members.append(key: key, from: &reader)
    }

    override func absorb(_ other: EntityBox) {
        guard let other = other as? UntypedBox else { return }
        let fillOnly = fillsOnly(from: other)
        if !fillOnly, object == nil, other.object == nil {
            // The later draft's members after this one's: as setting each of them in order.
            members.append(contentsOf: other.members)
        } else {
            var fields = self.fields
            let had = fillOnly ? Set(fields.keys) : []
            for member in other.fields.members where !had.contains(member.key) {
                fields[member.key] = member.value
            }
            self.fields = fields
        }
        if let v = other.dataVersion { dataVersion = v }
    }

    override func merged(with draft: EntityBox) -> (box: EntityBox, changed: [String]) {
        guard let draft = draft as? UntypedBox else { return (draft, draft.presentKeys) }
        let box = UntypedBox(key: key, prefix: entityPrefix)
        var fields = self.fields
        box.dataVersion = draft.dataVersion ?? dataVersion
        var changed: [String] = []
        let had = fillsOnly(from: draft) ? Set(fields.keys) : []
        for member in draft.fields.members where !had.contains(member.key) && fields[member.key] != member.value {
            fields[member.key] = member.value
            changed.append(member.key)
        }
        box.fields = fields
        return (box, changed)
    }

    override func writeFields(to writer: inout JSONWriter) {
        // Straight from the members as read, when no key came twice: most records of an
        // ingest are written to the file without their fields ever being built as values.
        if object == nil, members.write(to: &writer) { return }
        for member in fields.members {
            writer.key(member.key)
            writer.value(member.value)
        }
    }
}
