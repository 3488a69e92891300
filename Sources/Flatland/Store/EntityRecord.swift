import FlatlandJSON

/// One record of the store: an entity (typed or untyped) and what is known about it.
public struct EntityRecord: Sendable {
    /// The entity itself.
    public enum Payload: Sendable {
        /// A value of a registered type.
        case typed(any Entity)
        /// An entity with no registered type: its fields as JSON; nested entities appear as
        /// `{"$ref": "<id>"}`.
        case untyped(JSONObject)
    }

    /// The full id, `<prefix>-<rest>`.
    public let id: String
    /// The type prefix.
    public let prefix: String
    /// The entity.
    public internal(set) var payload: Payload
    /// Which declared fields (by index) a typed record has received so far.
    var present: FieldSet
    /// The data version of the last applied update, if the type or the ingest has a version key.
    public internal(set) var dataVersion: Double?
    /// The schema version the record was written under.
    public internal(set) var classVersion: Int

    init(id: String, prefix: String, payload: Payload, present: FieldSet, dataVersion: Double?, classVersion: Int) {
        self.id = id
        self.prefix = prefix
        self.payload = payload
        self.present = present
        self.dataVersion = dataVersion
        self.classVersion = classVersion
    }

    /// The typed entity, if this record holds an `E`.
    public func entity<E: Entity>(as type: E.Type = E.self) -> E? {
        if case .typed(let value) = payload { return value as? E }
        return nil
    }

    /// The JSON keys of the fields received so far (not the id), in declaration order for typed
    /// records and arrival order for untyped ones.
    public var presentFields: [String] {
        switch payload {
        case .typed(let value):
            let keys = fieldKeys(of: value)
            return present.indexes.map { keys[$0] }
        case .untyped(let object):
            return object.keys
        }
    }

    private func fieldKeys(of value: any Entity) -> [String] {
        func keys<E: Entity>(_ v: E) -> [String] { E.fields.map(\.key) }
        return keys(value)
    }

    /// The fields of `desired` that this record lacks, plus `"uuid"` whenever any are missing,
    /// so a screen can ask the server for exactly those (`?fields=`).
    public func missingFields(for desired: [String]) -> [String] {
        let have = Set(presentFields)
        let missing = desired.filter { !have.contains($0) && $0 != "uuid" }
        return missing.isEmpty ? [] : ["uuid"] + missing
    }

    /// The present fields as JSON (nested entities as their ids for typed records, as
    /// `{"$ref": id}` for untyped ones).
    public var fields: JSONObject {
        switch payload {
        case .untyped(let object):
            return object
        case .typed(let value):
            var writer = JSONWriter()
            writer.beginObject()
            encodeFields(value, mask: present, to: &writer)
            writer.endObject()
            guard case .object(let object) = try? JSONValue(parsing: writer.bytes) else { return JSONObject() }
            return object
        }
    }

    func encodeFields(_ value: any Entity, mask: FieldSet, to writer: inout JSONWriter) {
        func encode<E: Entity>(_ v: E) {
            for (i, field) in E.fields.enumerated() where mask.contains(i) {
                writer.key(field.key)
                field.encode(v, &writer)
            }
        }
        encode(value)
    }
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
        for field in Self.fields where keys?.contains(field.key) ?? true {
            writer.key(field.key)
            field.encode(self, &writer)
        }
        writer.endObject()
    }
}
