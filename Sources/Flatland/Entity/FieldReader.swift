import FlatlandJSON

/// One token of a value: what ``FieldValue`` decoders read.
public struct FieldToken {
    /// What kind of token this is.
    public enum Kind: UInt8, Sendable {
        case beginObject, endObject, beginArray, endArray, key, string, number, `true`, `false`, null
        /// A nested entity that the ingestor stored on its own; ``FieldToken/bytes`` is its id.
        case reference
    }

    /// What kind of token this is.
    public let kind: Kind
    /// The text of a key, string, number or reference (empty for the others), valid only while
    /// the decoder runs.
    public let bytes: JSONBytes

    /// The token's JSON type, for messages: "string", "number", "object", ….
    public var typeName: String {
        switch kind {
        case .beginObject, .endObject, .reference: "object"
        case .beginArray, .endArray: "array"
        case .key: "key"
        case .string: "string"
        case .number: "number"
        case .true, .false: "boolean"
        case .null: "null"
        }
    }
}

/// Why a field's value could not be decoded, with the path inside the field (`[2].name`).
public struct FieldError: Error, Hashable, CustomStringConvertible {
    /// What went wrong: `expected integer, found string`.
    public var message: String
    /// The path below the field, `[2].name`, or empty for the field itself.
    public var relativePath: String

    /// An error with a message and no path.
    public init(_ message: String, relativePath: String = "") {
        self.message = message
        self.relativePath = relativePath
    }

    /// `expected <what>, found <token's type>`.
    public static func mismatch(expected: String, found token: FieldToken) -> FieldError {
        FieldError("expected \(expected), found \(token.typeName)")
    }

    public var description: String { relativePath.isEmpty ? message : "\(relativePath): \(message)" }
}

/// A pull reader over the tokens of one value, for ``FieldValue`` decoders.
///
/// The ingestor hands each declared field its value as a reader: a single token for a scalar,
/// the recorded tokens of an array or object, with nested entities already stored and replaced
/// by ``FieldToken/Kind-swift.enum/reference`` tokens.
public struct FieldReader {
    let tokens: UnsafeBufferPointer<TapeToken>
    let storage: UnsafeRawBufferPointer
    /// The id strings that reference tokens point at.
    let references: UnsafeBufferPointer<String>
    var index: Int

    init(
        tokens: UnsafeBufferPointer<TapeToken>, storage: UnsafeRawBufferPointer,
        references: UnsafeBufferPointer<String> = UnsafeBufferPointer(start: nil, count: 0)
    ) {
        self.tokens = tokens
        self.storage = storage
        self.references = references
        self.index = 0
    }

    /// The stored entity's id string, when the token just read is a reference: an id field
    /// shares it instead of making a copy of its bytes.
    @usableFromInline
    func referenceOfLastToken() -> String? {
        guard index > 0 else { return nil }
        let r = Int(tokens[index - 1].reference)
        guard tokens[index - 1].kind == .reference, r >= 0, r < references.count else { return nil }
        return references[r]
    }

    /// Whether every token has been read.
    public var isAtEnd: Bool { index >= tokens.count }

    private func token(at i: Int) -> FieldToken {
        let t = tokens[i]
        let bytes = JSONBytes(
            unsafeBuffer: UnsafeRawBufferPointer(
                rebasing: storage[Int(t.start)..<Int(t.start) + Int(t.length)]))
        return FieldToken(kind: t.kind, bytes: bytes)
    }

    /// The next token, without reading it.
    public func peek() throws(FieldError) -> FieldToken {
        guard index < tokens.count else { throw FieldError("unexpected end of value") }
        return token(at: index)
    }

    /// Reads the next token.
    public mutating func next() throws(FieldError) -> FieldToken {
        let t = try peek()
        index += 1
        return t
    }

    /// Reads `null` if it comes next; returns whether it did.
    public mutating func readNull() throws(FieldError) -> Bool {
        if try peek().kind == .null {
            index += 1
            return true
        }
        return false
    }

    /// Reads a string.
    public mutating func readString() throws(FieldError) -> String {
        let t = try next()
        guard t.kind == .string else { throw .mismatch(expected: "string", found: t) }
        return t.bytes.parsedString
    }

    /// Reads a string into `value`, which keeps its storage when the text is the same.
    public mutating func readString(updating value: inout String) throws(FieldError) {
        let t = try next()
        guard t.kind == .string else { throw .mismatch(expected: "string", found: t) }
        if value.utf8.count == t.bytes.count, t.bytes.equals(value) { return }
        value = t.bytes.parsedString
    }

    /// Reads a number's exact text.
    public mutating func readNumber(expected: String = "number") throws(FieldError) -> JSONNumberText {
        let t = try next()
        guard t.kind == .number else { throw .mismatch(expected: expected, found: t) }
        return JSONNumberText(unsafeBuffer: t.bytes.buffer)
    }

    /// Reads `true` or `false`.
    public mutating func readBool() throws(FieldError) -> Bool {
        let t = try next()
        switch t.kind {
        case .true: return true
        case .false: return false
        default: throw .mismatch(expected: "boolean", found: t)
        }
    }

    /// Reads an array, calling `element` once per element (the reader stands on its first token).
    public mutating func readArray(_ element: (inout FieldReader) throws(FieldError) -> Void) throws(FieldError) {
        let t = try next()
        guard t.kind == .beginArray else { throw .mismatch(expected: "array", found: t) }
        var i = 0
        while try peek().kind != .endArray {
            do throws(FieldError) {
                try element(&self)
            } catch {
                throw FieldError(error.message, relativePath: "[\(i)]" + error.relativePath)
            }
            i += 1
        }
        index += 1
    }

    /// Reads an object, calling `member` with each key (the reader stands on the member's value,
    /// which `member` must read or ``skipValue()``).
    public mutating func readObject(_ member: (JSONBytes, inout FieldReader) throws(FieldError) -> Void)
        throws(FieldError)
    {
        let t = try next()
        guard t.kind == .beginObject else { throw .mismatch(expected: "object", found: t) }
        while true {
            let k = try next()
            if k.kind == .endObject { return }
            guard k.kind == .key else { throw FieldError("malformed object") }
            do throws(FieldError) {
                try member(k.bytes, &self)
            } catch {
                throw FieldError(error.message, relativePath: "." + k.bytes.string + error.relativePath)
            }
        }
    }

    /// The number of elements of the array that comes next (0 if no array comes next), so a
    /// decoder can reserve its storage once instead of growing it element by element.
    @usableFromInline
    func elementCountOfNextArray() -> Int {
        guard index < tokens.count, tokens[index].kind == .beginArray else { return 0 }
        var depth = 0
        var count = 0
        for i in (index + 1)..<tokens.count {
            switch tokens[i].kind {
            case .beginArray, .beginObject:
                if depth == 0 { count += 1 }
                depth += 1
            case .endArray, .endObject:
                if depth == 0 { return count }
                depth -= 1
            case .key:
                break
            default:
                if depth == 0 { count += 1 }
            }
        }
        return count
    }

    /// Skips one whole value.
    public mutating func skipValue() throws(FieldError) {
        var depth = 0
        repeat {
            let t = try next()
            switch t.kind {
            case .beginArray, .beginObject: depth += 1
            case .endArray, .endObject: depth -= 1
            default: break
            }
        } while depth > 0
    }

    /// Reads one whole value as a `JSONValue`. A nested entity (which the ingest stored as a
    /// record of its own) becomes its id, as a string: a typed entity's `JSONValue` field holds
    /// plain ids, and an object the server sent is kept exactly as it was, `{"$ref": …}` too.
    public mutating func readJSONValue() throws(FieldError) -> JSONValue {
        try readJSONValue(untyped: false)
    }

    /// Reads one whole value as a `JSONValue`; for an untyped record when `untyped` is set:
    /// a nested entity then becomes `{"$ref": id}`, and an object whose only member is `$ref`
    /// (or `$$ref`, `$$$ref`, …) gets one more `$` in front of that key, so that `{"$ref": …}`
    /// in an untyped record is always a reference (see ``EntityRecord/Payload/untyped(_:)``).
    mutating func readJSONValue(untyped: Bool) throws(FieldError) -> JSONValue {
        let t = try next()
        switch t.kind {
        case .null: return .null
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .string: return .string(t.bytes.parsedString)
        case .number: return .number(JSONNumberText(unsafeBuffer: t.bytes.buffer).number)
        case .reference: return untyped ? .object(["$ref": .string(t.bytes.string)]) : .string(t.bytes.string)
        case .beginArray:
            var items: [JSONValue] = []
            while try peek().kind != .endArray { items.append(try readJSONValue(untyped: untyped)) }
            index += 1
            return .array(items)
        case .beginObject:
            var object = JSONObject()
            while true {
                let k = try next()
                if k.kind == .endObject { break }
                object.members.append((key: k.bytes.parsedString, value: try readJSONValue(untyped: untyped)))
            }
            if untyped, object.count == 1, let key = object.keys.first, isReferenceKey(key), let value = object[key] {
                return .object(JSONObject(dictionaryLiteral: ("$" + key, value)))
            }
            return .object(object)
        case .key, .endArray, .endObject:
            throw FieldError("malformed value")
        }
    }
}

/// Whether `key` is `ref` after one or more `$`: the key of an untyped record's reference
/// (`$ref`) or of an escaped literal (`$$ref`, …).
func isReferenceKey(_ key: String) -> Bool { isReferenceKey(key.utf8) }

/// Whether the UTF-8 `key` is `ref` after one or more `$`.
func isReferenceKey<Bytes: BidirectionalCollection<UInt8>>(_ utf8: Bytes) -> Bool {
    guard utf8.count >= 4, utf8.starts(with: "$".utf8), utf8.reversed().starts(with: "fer".utf8) else { return false }
    return utf8.dropLast(3).allSatisfy { $0 == UInt8(ascii: "$") }
}
