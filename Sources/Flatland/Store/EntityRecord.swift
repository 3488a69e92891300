import FlatlandJSON

/// One record of the store: an entity (typed or untyped) and what is known about it.
///
/// A record is a value: it does not change when the store does.
public struct EntityRecord: Sendable {
    /// The entity itself.
    public enum Payload: Sendable {
        /// A value of a registered type.
        case typed(any Entity)
        /// An entity with no registered type: its fields as JSON; nested entities appear as
        /// `{"$ref": "<id>"}`.
        case untyped(JSONObject)
    }

    let box: EntityBox

    init(_ box: EntityBox) { self.box = box }

    /// The full id, `<prefix>-<rest>`.
    public var id: String { box.id }
    /// The type prefix.
    public var prefix: String { box.prefix }
    /// The entity.
    public var payload: Payload { box.payload }
    /// The data version of the last applied update, if the type or the ingest has a version key.
    public var dataVersion: Double? { box.dataVersion }
    /// The schema version the record was written under.
    public var classVersion: Int { box.classVersion }

    /// The typed entity, if this record holds an `E`.
    public func entity<E: Entity>(as type: E.Type = E.self) -> E? { (box as? TypedBox<E>)?.value }

    /// The JSON keys of the fields received so far (not the id), in declaration order for typed
    /// records and arrival order for untyped ones.
    public var presentFields: [String] { box.presentKeys }

    /// The present fields as a JSON object (nested entities as their ids for typed records, as
    /// `{"$ref": id}` for untyped ones).
    public var fields: JSONObject {
        if let untyped = box as? UntypedBox { return untyped.fields }
        var writer = JSONWriter()
        writer.beginObject()
        box.writeFields(to: &writer)
        writer.endObject()
        guard case .object(let object) = try? JSONValue(parsing: writer.bytes) else { return JSONObject() }
        return object
    }

    /// Writes the present fields as members of an object the caller has begun.
    public func writeFields(to writer: inout JSONWriter) { box.writeFields(to: &writer) }
}

extension Entity {
    /// The entity as a JSON object: `idKey` first, then every declared field (or only those in
    /// `only`, for a partial update such as a `PATCH` body).
    public func jsonObject(idKey: String = "uuid", only keys: [String]? = nil) -> [UInt8] {
        var writer = JSONWriter()
        writeJSON(to: &writer, idKey: idKey, only: keys)
        return writer.bytes
    }

    /// Writes the entity as a JSON object with the one writer.
    public func writeJSON(to writer: inout JSONWriter, idKey: String = "uuid", only keys: [String]? = nil) {
        writer.beginObject()
        writer.key(idKey)
        writer.string(id.rawValue)
        writeFields(to: &writer, only: keys)
        writer.endObject()
    }

    /// Writes every declared field (or only those in `only`) as members of an object the caller
    /// has begun: for bodies whose id is written another way (a table row's server id, say).
    public func writeFields(to writer: inout JSONWriter, only keys: [String]? = nil) {
        for field in Self.fields where keys?.contains(field.key) ?? true {
            writer.key(field.key)
            field.encode(self, &writer)
        }
    }
}
