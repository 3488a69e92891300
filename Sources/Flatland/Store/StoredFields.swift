import FlatlandJSON

/// A record's fields as a store file keeps them: one byte, ``marker``, then the fields as one
/// object in FlatlandJSON's token encoding (`JSONTokenEncoding`): every key, string and number
/// as its length and bytes (strings unescaped, NUL included), containers as begin and end
/// tokens.
///
/// Written straight from the record by the field encoders (no JSON text, no escaping), and read
/// back by the same field decoders as a response, over tokens that point into the stored bytes:
/// no JSON is parsed and no intermediate value is built for a typed record's fields. Keys are
/// kept (not field numbers), so a record reads back whatever the order of the declared fields,
/// and a key the type no longer declares is skipped unread.
package enum StoredFields {
    /// The first byte of the encoding: never the first byte of JSON text, nor of UTF-8.
    package static let marker: UInt8 = 0xF1

    /// The deepest nesting of objects and arrays a record's fields may have, the fields' own
    /// object included: the parser's default limit (``JSONLimits/maxDepth``), so whatever a
    /// response may hold a record may hold, and a reader that recurses per level never meets
    /// more than that however the bytes were damaged.
    package static let maxDepth = JSONLimits.default.maxDepth

    /// The present fields of `record`, encoded; nil when they would not read back as they are
    /// (``unstorable(_:)`` says why): nested deeper than ``maxDepth`` (a value the app made, or
    /// an ingest whose parser allows more), or holding a value its field's encoder says will
    /// not (a `Double` that is NaN or infinite, written as `null`; a date outside the years 0
    /// to 9999, which ISO 8601 text cannot carry).
    package static func encode(_ record: EntityRecord) -> [UInt8]? {
        let writer = write(record)
        return writer.deepestTokenDepth <= maxDepth && writer.unreadableValue == nil ? writer.bytes : nil
    }

    /// Why ``encode(_:)`` gave nil for `record`, in words; nil when it did not.
    package static func unstorable(_ record: EntityRecord) -> String? {
        let writer = write(record)
        if writer.deepestTokenDepth > maxDepth {
            return
                "its fields nest \(writer.deepestTokenDepth) levels deep, more than the \(maxDepth) a store file keeps"
        }
        if let value = writer.unreadableValue { return "it holds \(value), which would not read back" }
        return nil
    }

    private static func write(_ record: EntityRecord) -> JSONWriter {
        var writer = JSONWriter(tokensWithCapacity: 256, header: marker)
        writer.beginObject()
        record.box.writeFields(to: &writer)
        writer.endObject()
        return writer
    }

    /// The fields given as a JSON object's text (the format before this one), encoded.
    ///
    /// Read with no limit on the length of a string, key or number: the format before wrote
    /// whatever a record held (an ingest with larger limits, a value upserted by the app), and
    /// a migration refuses the whole file for one record it cannot read. Nesting is limited to
    /// ``maxDepth``, as in this encoding.
    package static func encode(json: [UInt8]) throws -> [UInt8] {
        let value = try JSONValue(parsing: json, options: migrationParsing)
        guard case .object = value else { throw StoredFieldsError(description: "the fields are not a JSON object") }
        var writer = JSONWriter(tokensWithCapacity: json.count, header: marker)
        writer.value(value)
        return writer.bytes
    }

    /// (4 GiB: more than a SQLite value holds, and far from `Int.max`, where the parser's
    /// limit arithmetic would overflow.)
    static let migrationParsing = JSONParserOptions(
        limits: JSONLimits(
            maxDepth: maxDepth, maxStringLength: 1 << 32, maxKeyLength: 1 << 32, maxNumberLength: 1 << 32))

    /// What is wrong with `fields` as stored in this encoding, or nil when nothing is.
    package static func problem(in fields: [UInt8]) -> String? {
        var tokens: [TapeToken] = []
        return fields.withUnsafeBytes { scan($0, into: &tokens) }
    }

    /// Reads the encoding into `tokens` (pointing into `bytes`), checking it whole: the marker,
    /// one object, every length within the bytes, keys where keys belong (and nowhere else),
    /// containers closed and nested at most ``maxDepth`` deep,
    /// strings well-formed UTF-8, numbers JSON numbers, nothing after the end. Returns the
    /// problem, or nil.
    static func scan(_ bytes: UnsafeRawBufferPointer, into tokens: inout [TapeToken]) -> String? {
        tokens.removeAll(keepingCapacity: true)
        guard bytes.count >= 3, bytes[0] == marker, bytes[1] == JSONTokenEncoding.beginObject else {
            return "no encoded object"
        }
        // Per open container: whether it is an object, and whether its next token is a key.
        var open: [(object: Bool, wantsKey: Bool)] = []
        var i = 1
        let n = bytes.count
        while i < n {
            let byte = bytes[i]
            let at = i
            i += 1
            guard let kind = FieldToken.Kind(rawValue: byte), kind != .reference else {
                return "unknown token \(byte) at byte \(at)"
            }
            if let top = open.last, top.object {
                guard top.wantsKey == (kind == .key || kind == .endObject) else {
                    return top.wantsKey
                        ? "a value where a key belongs at byte \(at)" : "a key with no value at byte \(at)"
                }
                open[open.count - 1].wantsKey = kind != .key
            } else if kind == .key {
                return "a key outside an object at byte \(at)"
            } else if open.isEmpty, tokens.count > 0 {
                return "bytes after the end at byte \(at)"
            }
            var start = i
            var length = 0
            switch kind {
            case .key, .string, .number:
                var shift = 0
                while true {
                    guard i < n, shift < 35 else { return "a length past the end at byte \(at)" }
                    let b = bytes[i]
                    i += 1
                    length |= Int(b & 0x7F) << shift
                    shift += 7
                    if b < 0x80 { break }
                }
                start = i
                guard length <= n - i else { return "a length past the end at byte \(at)" }
                let text = UnsafeRawBufferPointer(rebasing: bytes[i..<i + length])
                if kind == .number {
                    guard JSONTokenEncoding.isNumber(text) else { return "a number that is not one at byte \(at)" }
                } else {
                    guard JSONTokenEncoding.isValidUTF8(text) else { return "ill-formed UTF-8 at byte \(at)" }
                }
                i += length
            case .beginObject, .beginArray:
                // The readers recurse once per level: deeper than a response may nest is damage.
                guard open.count < maxDepth else { return "nested deeper than \(maxDepth) at byte \(at)" }
                open.append((object: kind == .beginObject, wantsKey: kind == .beginObject))
            case .endObject, .endArray:
                guard let top = open.popLast(), top.object == (kind == .endObject) else {
                    return "an unmatched end at byte \(at)"
                }
            default: break
            }
            tokens.append(TapeToken(kind: kind, start: Int32(start), length: Int32(length)))
        }
        guard open.isEmpty else { return "an object or array not closed" }
        return nil
    }
}

/// Why stored fields could not be read.
struct StoredFieldsError: Error, CustomStringConvertible {
    var description: String
}

extension EntityRegistry {
    /// A record from its stored fields in the token encoding: a typed record of the current
    /// class version decodes each field from its tokens in place; an untyped record, or one to
    /// migrate, reads its fields as a JSON object.
    func decodeEncoded(_ stored: StoredRecord) throws -> EntityBox {
        var tokens: [TapeToken] = []
        tokens.reserveCapacity(64)
        return try stored.fields.withUnsafeBytes { bytes in
            if let problem = StoredFields.scan(bytes, into: &tokens) {
                throw StoredFieldsError(description: "the stored fields of \(stored.id) are damaged: \(problem)")
            }
            return try tokens.withUnsafeBufferPointer { tokens in
                guard let type = type(forPrefix: stored.prefix), stored.classVersion >= type.classVersion else {
                    var reader = FieldReader(tokens: tokens, storage: bytes)
                    guard case .object(let fields) = try reader.readJSONValue() else {
                        throw StoredFieldsError(description: "the stored fields of \(stored.id) are not an object")
                    }
                    return try decodeStored(
                        id: stored.id, prefix: stored.prefix, fields: fields, classVersion: stored.classVersion,
                        dataVersion: stored.dataVersion)
                }
                let box = type.makeDraft(key: RecordKey(stored.id))
                box.dataVersion = stored.dataVersion
                // The members of the one object: a key, then its value's tokens.
                var i = 1
                var hint = 0
                let last = tokens.count - 1
                while i < last {
                    let key = tokens[i]
                    let keyBytes = UnsafeRawBufferPointer(
                        rebasing: bytes[Int(key.start)..<Int(key.start) + Int(key.length)])
                    let start = i + 1
                    var end = start + 1
                    if tokens[start].kind == .beginObject || tokens[start].kind == .beginArray {
                        var depth = 1
                        while depth > 0 {
                            switch tokens[end].kind {
                            case .beginObject, .beginArray: depth += 1
                            case .endObject, .endArray: depth -= 1
                            default: break
                            }
                            end += 1
                        }
                    }
                    if let field = type.fieldIndex(JSONBytes(unsafeBuffer: keyBytes), hint: hint) {
                        var reader = FieldReader(
                            tokens: UnsafeBufferPointer(rebasing: tokens[start..<end]), storage: bytes)
                        do throws(FieldError) {
                            try box.decode(field: field, from: &reader)
                        } catch {
                            throw FieldError(
                                "\(stored.id).\(String(decoding: keyBytes, as: UTF8.self)): \(error.message)",
                                relativePath: error.relativePath)
                        }
                        hint = field + 1
                    }
                    i = end
                }
                return box
            }
        }
    }
}

extension EntityBox {
    /// One present field as JSON, written alone (typed boxes through the field's encoder, in
    /// the token encoding, read back as a value; untyped boxes from their members).
    final func fieldValue(_ key: String) -> JSONValue? {
        if let untyped = self as? UntypedBox { return untyped.field(key) }
        guard let type else { return nil }
        var utf8 = key
        let index = utf8.withUTF8 { type.fieldIndex(JSONBytes(unsafeBuffer: UnsafeRawBufferPointer($0)), hint: 0) }
        guard let index, present.contains(index) else { return nil }
        var writer = JSONWriter(tokensWithCapacity: 32, header: StoredFields.marker)
        writer.beginObject()
        writeField(index, to: &writer)
        writer.endObject()
        var tokens: [TapeToken] = []
        return writer.bytes.withUnsafeBytes { bytes -> JSONValue? in
            guard StoredFields.scan(bytes, into: &tokens) == nil, tokens.count > 3 else { return nil }
            return tokens.withUnsafeBufferPointer { tokens in
                var reader = FieldReader(
                    tokens: UnsafeBufferPointer(rebasing: tokens[2..<tokens.count - 1]), storage: bytes)
                return try? reader.readJSONValue()
            }
        }
    }
}
