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
