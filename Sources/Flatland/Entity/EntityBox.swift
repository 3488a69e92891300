import FlatlandJSON

/// One entity's data: a response's draft while the response streams, then, once applied, the
/// store's record. A stored box is never mutated again (an update stores a new box), so
/// snapshots and readers can share boxes without copying.
class EntityBox: @unchecked Sendable {
    final let key: RecordKey
    final var id: String { key.id }
    /// The registered type, for typed boxes.
    final let type: EntityType?
    /// Typed boxes: the record's value, where the type's field decoders write.
    final let storage: UnsafeMutableRawPointer?
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

    init(key: RecordKey, classVersion: Int, type: EntityType?, storage: UnsafeMutableRawPointer?) {
        self.key = key
        self.classVersion = classVersion
        self.type = type
        self.storage = storage
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
        guard let type, let storage else { return }
        try type.rawDecoders[index](&reader, storage)
        present.insert(index)
    }
    /// Sets a member (untyped boxes).
    func set(member key: String, value: JSONValue) {}
    /// Folds a later draft of the same entity into this draft: its fields win.
    func absorb(_ other: EntityBox) {}
    /// A new box: this record with `draft`'s fields applied, and the keys whose values changed.
    func merged(with draft: EntityBox) -> (box: EntityBox, changed: [String]) { fatalError("abstract") }
    /// The present fields as JSON.
    func writeFields(to writer: inout JSONWriter) {}
}

final class TypedBox<E: Entity>: EntityBox, @unchecked Sendable {
    /// The record, allocated once with the box: field decoders write into it in place.
    private let slot: UnsafeMutablePointer<E>
    var value: E { slot.pointee }
    var entityType: TypedEntityType<E> { unsafeDowncast(type.unsafelyUnwrapped, to: TypedEntityType<E>.self) }

    required init(key: RecordKey, type: TypedEntityType<E>) {
        slot = .allocate(capacity: 1)
        slot.initialize(to: E(id: EntityID(key.id)))
        super.init(key: key, classVersion: E.classVersion, type: type, storage: UnsafeMutableRawPointer(slot))
    }

    init(value: E, present: FieldSet, dataVersion: Double?, type: TypedEntityType<E>) {
        slot = .allocate(capacity: 1)
        slot.initialize(to: value)
        super.init(
            key: RecordKey(value.id.rawValue), classVersion: E.classVersion, type: type,
            storage: UnsafeMutableRawPointer(slot))
        self.present = present
        self.dataVersion = dataVersion
    }

    deinit {
        slot.deinitialize(count: 1)
        slot.deallocate()
    }

    override var prefix: String { E.prefix }
    override var payload: EntityRecord.Payload { .typed(value) }
    override var presentKeys: [String] { present.indexes.map { entityType.fieldKeys[$0] } }

    override func absorb(_ other: EntityBox) {
        guard let other = other as? TypedBox<E> else { return }
        let fields = entityType.fields
        for i in other.present.indexes { fields[i].copy(other.slot.pointee, &slot.pointee) }
        present.formUnion(other.present)
        if let v = other.dataVersion { dataVersion = v }
    }

    override func merged(with draft: EntityBox) -> (box: EntityBox, changed: [String]) {
        guard let draft = draft as? TypedBox<E> else { return (draft, draft.presentKeys) }
        var next = value
        var changed: [String] = []
        for i in draft.present.indexes {
            let field = entityType.fields[i]
            if !present.contains(i) || !field.equal(draft.value, next) {
                field.copy(draft.value, &next)
                changed.append(field.key)
            }
        }
        var nextPresent = present
        nextPresent.formUnion(draft.present)
        let box = TypedBox(
            value: next, present: nextPresent, dataVersion: draft.dataVersion ?? dataVersion, type: entityType)
        return (box, changed)
    }

    override func writeFields(to writer: inout JSONWriter) {
        let fields = entityType.fields
        for i in present.indexes {
            writer.key(fields[i].key)
            fields[i].encode(value, &writer)
        }
    }
}

final class UntypedBox: EntityBox, @unchecked Sendable {
    let entityPrefix: String
    var fields = JSONObject()

    init(key: RecordKey, prefix: String) {
        entityPrefix = prefix
        super.init(key: key, classVersion: 1, type: nil, storage: nil)
    }

    override var prefix: String { entityPrefix }
    override var payload: EntityRecord.Payload { .untyped(fields) }
    override var presentKeys: [String] { fields.keys }

    override func set(member key: String, value: JSONValue) { fields[key] = value }

    override func absorb(_ other: EntityBox) {
        guard let other = other as? UntypedBox else { return }
        for member in other.fields.members { fields[member.key] = member.value }
        if let v = other.dataVersion { dataVersion = v }
    }

    override func merged(with draft: EntityBox) -> (box: EntityBox, changed: [String]) {
        guard let draft = draft as? UntypedBox else { return (draft, draft.presentKeys) }
        let box = UntypedBox(key: key, prefix: entityPrefix)
        box.fields = fields
        box.dataVersion = draft.dataVersion ?? dataVersion
        var changed: [String] = []
        for member in draft.fields.members where box.fields[member.key] != member.value {
            box.fields[member.key] = member.value
            changed.append(member.key)
        }
        return (box, changed)
    }

    override func writeFields(to writer: inout JSONWriter) {
        for member in fields.members {
            writer.key(member.key)
            writer.value(member.value)
        }
    }
}
