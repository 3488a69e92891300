import FlatlandJSON

/// An entity being read from a response: the fields it carried so far, not yet in the store.
class Draft {
    let id: String
    var present = FieldSet()
    var dataVersion: Double?

    init(id: String) { self.id = id }

    var prefix: String { fatalError("abstract") }
    var type: EntityType? { nil }
    /// Decodes declared field `index` (typed drafts).
    func decode(field index: Int, from reader: inout FieldReader) throws(FieldError) {}
    /// Sets a member (untyped drafts).
    func set(member key: String, value: JSONValue) {}
    /// Folds a later draft of the same entity into this one: its fields win.
    func absorb(_ other: Draft) {}
    /// The JSON key names of the present fields.
    var presentKeys: [String] { [] }
}

final class TypedDraft<E: Entity>: Draft {
    var value: E
    let entityType: TypedEntityType<E>

    init(id: String, type: TypedEntityType<E>) {
        value = E(id: EntityID(id))
        entityType = type
        super.init(id: id)
    }

    override var prefix: String { E.prefix }
    override var type: EntityType? { entityType }

    override func decode(field index: Int, from reader: inout FieldReader) throws(FieldError) {
        try entityType.fields[index].decode(&reader, &value)
        present.insert(index)
    }

    override func absorb(_ other: Draft) {
        guard let other = other as? TypedDraft<E> else { return }
        for i in other.present.indexes { entityType.fields[i].copy(other.value, &value) }
        present.formUnion(other.present)
        if let v = other.dataVersion { dataVersion = v }
    }

    override var presentKeys: [String] { present.indexes.map { entityType.fieldKeys[$0] } }
}

final class UntypedDraft: Draft {
    let entityPrefix: String
    var fields = JSONObject()

    init(id: String, prefix: String) {
        entityPrefix = prefix
        super.init(id: id)
    }

    override var prefix: String { entityPrefix }

    override func set(member key: String, value: JSONValue) { fields[key] = value }

    override func absorb(_ other: Draft) {
        guard let other = other as? UntypedDraft else { return }
        for member in other.fields.members { fields[member.key] = member.value }
        if let v = other.dataVersion { dataVersion = v }
    }

    override var presentKeys: [String] { fields.keys }
}
