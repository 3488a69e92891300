import FlatlandJSON

/// An untyped entity's members as the ingest read them: each member's key and value tokens, in
/// the order they arrived, with their bytes in one buffer. The `JSONValue`s are built only when
/// the fields are read (``object()``), not for every member of every entity an ingest stores:
/// a response stored into an empty store never builds one.
///
/// The tokens are those the ingestor hands a typed field's decoder (a nested entity already
/// replaced by a reference to its id), and ``object()`` reads them with the same
/// `FieldReader.readJSONValue(untyped:)` the ingest used before, setting each member by key in
/// order: the object is exactly the one setting each member as it arrived would have built
/// (a repeated key keeps its first place and its last value).
struct UntypedMembers: Sendable {
    private var tokens: [TapeToken] = []
    private var bytes: [UInt8] = []

    /// Whether no member was appended.
    var isEmpty: Bool { tokens.isEmpty }

    private mutating func append(_ kind: FieldToken.Kind, _ text: UnsafeRawBufferPointer) {
        tokens.append(
            TapeToken(
                kind: kind, start: Int32(truncatingIfNeeded: bytes.count), length: Int32(truncatingIfNeeded: text.count)
            ))
        bytes.append(contentsOf: text)
    }

    /// Appends member `key` with the value `reader` is at, and moves the reader past it.
    mutating func append(key: String, from reader: inout FieldReader) throws(FieldError) {
        if tokens.isEmpty {
            // Room for a few members at once: growing from empty by doubling copied every
            // record's tokens about five times over (callgrind, twitter.json).
            tokens.reserveCapacity(16)
            bytes.reserveCapacity(128)
        }
        let mark = (tokens: tokens.count, bytes: bytes.count)
        var key = key
        key.withUTF8 { append(.key, UnsafeRawBufferPointer($0)) }
        do throws(FieldError) {
            try reader.forEachTokenOfValue { kind, text in append(kind, text) }
        } catch {
            // Nothing half-appended: the member is left out, as the value that failed was.
            tokens.removeSubrange(mark.tokens...)
            bytes.removeSubrange(mark.bytes...)
            throw error
        }
    }

    /// Appends every member of `other`, after this one's: as setting each of them in order.
    mutating func append(contentsOf other: UntypedMembers) {
        let offset = Int32(truncatingIfNeeded: bytes.count)
        for token in other.tokens {
            var moved = token
            moved.start &+= offset
            tokens.append(moved)
        }
        bytes.append(contentsOf: other.bytes)
    }

    /// The members as an object: each set by key in the order it arrived.
    func object() -> JSONObject {
        var object = JSONObject()
        tokens.withUnsafeBufferPointer { tokens in
            bytes.withUnsafeBytes { bytes in
                var reader = FieldReader(tokens: tokens, storage: bytes)
                // The tokens were copied from well-formed values: reading them cannot fail.
                while !reader.isAtEnd, let key = try? reader.next(), key.kind == .key,
                    let value = try? reader.readJSONValue(untyped: true)
                {
                    object[key.bytes.parsedString] = value
                }
            }
        }
        return object
    }
}

extension UntypedMembers {
    /// Where one member is in ``tokens``: its key token, and its value's tokens.
    private struct Member {
        var key: Int
        var value: Range<Int>
    }

    /// The most members the readers below compare key by key (each against every other) before
    /// they build the object instead.
    private static let pairwiseLimit = 32

    /// The first token after the value that starts at `start`.
    private func valueEnd(from start: Int) -> Int {
        var depth = 0
        var i = start
        repeat {
            switch tokens[i].kind {
            case .beginArray, .beginObject: depth += 1
            case .endArray, .endObject: depth -= 1
            default: break
            }
            i += 1
        } while depth > 0
        return i
    }

    /// Every member in the order it arrived, when no key arrived twice and there are at most
    /// ``pairwiseLimit`` of them (nil otherwise: the caller builds the object).
    private func distinctMembers() -> [Member]? {
        bytes.withUnsafeBytes { bytes in
            var members: [Member] = []
            var i = 0
            while i < tokens.count {
                guard members.count < Self.pairwiseLimit,
                    !members.contains(where: { sameText($0.key, i, in: bytes) })
                else { return nil }
                let end = valueEnd(from: i + 1)
                members.append(Member(key: i, value: i + 1..<end))
                i = end
            }
            return members
        }
    }

    /// The bytes of token `index`, valid while `bytes` is borrowed.
    private func text(_ index: Int, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let t = tokens[index]
        return UnsafeRawBufferPointer(rebasing: bytes[Int(t.start)..<Int(t.start) + Int(t.length)])
    }

    /// Whether two tokens have the same bytes.
    private func sameText(_ a: Int, _ b: Int, in bytes: UnsafeRawBufferPointer) -> Bool {
        text(a, in: bytes).elementsEqual(text(b, in: bytes))
    }

    /// The keys as ``object()``'s would be (each once, where it first arrived), without building
    /// a value when no key arrived twice.
    func keys() -> [String] {
        guard let members = distinctMembers() else { return object().keys }
        return bytes.withUnsafeBytes { bytes in members.map { String(parsedUTF8: text($0.key, in: bytes)) } }
    }

    /// The value of the last member named `key` (the one ``object()`` keeps), read alone.
    func value(forKey key: String) -> JSONValue? {
        var key = key
        return key.withUTF8 { wanted in
            tokens.withUnsafeBufferPointer { tokenBuffer in
                bytes.withUnsafeBytes { bytes in
                    var found: Int?
                    var i = 0
                    while i < tokens.count {
                        if text(i, in: bytes).elementsEqual(UnsafeRawBufferPointer(wanted)) { found = i + 1 }
                        i = valueEnd(from: i + 1)
                    }
                    guard let found else { return nil }
                    var reader = FieldReader(tokens: tokenBuffer, storage: bytes)
                    reader.index = found
                    return try? reader.readJSONValue(untyped: true)
                }
            }
        }
    }

    /// Writes the members as `writer.value(.object(object()))` writes them, from the tokens,
    /// without building the object; false (and nothing written) when a key arrived twice or
    /// there are too many members to compare, where the caller writes the object.
    func write(to writer: inout JSONWriter) -> Bool {
        guard let members = distinctMembers() else { return false }
        bytes.withUnsafeBytes { bytes in
            for member in members {
                writer.key(utf8: text(member.key, in: bytes))
                var i = member.value.lowerBound
                writeValue(at: &i, in: bytes, to: &writer)
            }
        }
        return true
    }

    /// Writes the value at token `i` as `readJSONValue(untyped: true)` reads it: a nested
    /// entity as `{"$ref": id}`, an object whose one member is `$ref` (`$$ref`, …) with one more
    /// `$` in front of that key. Moves `i` past it.
    private func writeValue(at i: inout Int, in bytes: UnsafeRawBufferPointer, to writer: inout JSONWriter) {
        let index = i
        i += 1
        switch tokens[index].kind {
        case .null: writer.null()
        case .true: writer.bool(true)
        case .false: writer.bool(false)
        case .string: writer.string(utf8: text(index, in: bytes))
        case .number: writer.number(text: text(index, in: bytes))
        case .reference:
            writer.beginObject()
            writer.key("$ref")
            writer.string(utf8: text(index, in: bytes))
            writer.endObject()
        case .beginArray:
            writer.beginArray()
            while tokens[i].kind != .endArray { writeValue(at: &i, in: bytes, to: &writer) }
            i += 1
            writer.endArray()
        case .beginObject:
            writer.beginObject()
            let only = tokens[i].kind == .key && tokens[valueEnd(from: i + 1)].kind == .endObject
            while tokens[i].kind != .endObject {
                let key = text(i, in: bytes)
                if only, isReferenceKey(key) {
                    writer.key("$" + String(parsedUTF8: key))
                } else {
                    writer.key(utf8: key)
                }
                i += 1
                writeValue(at: &i, in: bytes, to: &writer)
            }
            i += 1
            writer.endObject()
        case .key, .endArray, .endObject:
            // Not the start of a value: the tokens were copied from well-formed values.
            preconditionFailure("an untyped member's tokens are malformed")
        }
    }
}

extension FieldReader {
    /// Reads one whole value, calling `body` with each of its tokens' kind and bytes (valid only
    /// during the call).
    mutating func forEachTokenOfValue(
        _ body: (FieldToken.Kind, UnsafeRawBufferPointer) -> Void
    ) throws(FieldError) {
        var depth = 0
        repeat {
            guard index < tokens.count else { throw FieldError("unexpected end of value") }
            let t = tokens[index]
            switch t.kind {
            case .beginArray, .beginObject: depth += 1
            case .endArray, .endObject:
                if depth == 0 { throw FieldError("malformed value") }
                depth -= 1
            case .key:
                if depth == 0 { throw FieldError("malformed value") }
            default: break
            }
            index += 1
            body(t.kind, UnsafeRawBufferPointer(rebasing: storage[Int(t.start)..<Int(t.start) + Int(t.length)]))
        } while depth > 0
    }
}
