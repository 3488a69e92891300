import FlatlandJSON

/// One entity's data: a response's draft while the response streams, then, once applied, the
/// store's record. A stored box is never mutated again (an update stores a new box), so
/// snapshots and readers can share boxes without copying.
class EntityBox: @unchecked Sendable {
    let id: String
    /// Typed boxes: which declared fields (by index) are present.
    var present = FieldSet()
    var dataVersion: Double?
    var classVersion: Int
    /// Drafts: the data version the store held when the response first needed it.
    private var stored: Double??

    /// The store's data version for this id, asked once.
    func storedVersion(_ load: () -> Double?) -> Double? {
        if let stored { return stored }
        let version = load()
        stored = .some(version)
        return version
    }

    init(id: String, classVersion: Int) {
        self.id = id
        self.classVersion = classVersion
    }

    var prefix: String { fatalError("abstract") }
    /// The registered type, for typed boxes.
    var type: EntityType? { nil }
    /// The entity as an existential (typed) or its fields (untyped).
    var payload: EntityRecord.Payload { fatalError("abstract") }
    /// The JSON keys of the present fields.
    var presentKeys: [String] { [] }

    /// Decodes declared field `index` (typed boxes).
    func decode(field index: Int, from reader: inout FieldReader) throws(FieldError) {}
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
    var value: E
    unowned let entityType: TypedEntityType<E>

    required init(id: String, type: TypedEntityType<E>) {
        value = E(id: EntityID(id))
        entityType = type
        super.init(id: id, classVersion: E.classVersion)
    }

    init(value: E, present: FieldSet, dataVersion: Double?, type: TypedEntityType<E>) {
        self.value = value
        entityType = type
        super.init(id: value.id.rawValue, classVersion: E.classVersion)
        self.present = present
        self.dataVersion = dataVersion
    }

    override var prefix: String { E.prefix }
    override var type: EntityType? { entityType }
    override var payload: EntityRecord.Payload { .typed(value) }
    override var presentKeys: [String] { present.indexes.map { entityType.fieldKeys[$0] } }

    override func decode(field index: Int, from reader: inout FieldReader) throws(FieldError) {
        let decode = entityType.rawDecoders[index]
        try withUnsafeMutablePointer(to: &value) { (p) throws(FieldError) in try decode(&reader, p) }
        present.insert(index)
    }

    override func absorb(_ other: EntityBox) {
        guard let other = other as? TypedBox<E> else { return }
        for i in other.present.indexes { entityType.fields[i].copy(other.value, &value) }
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

    init(id: String, prefix: String) {
        entityPrefix = prefix
        super.init(id: id, classVersion: 1)
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
        let box = UntypedBox(id: id, prefix: entityPrefix)
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
