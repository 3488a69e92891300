import FlatlandJSON

/// One recorded event: its kind and where its bytes sit in the tape's storage.
struct TapeToken {
    var kind: FieldToken.Kind
    var start: Int32
    var length: Int32
    /// References: where the stored entity's id string is in the tape's `references` (-1 none),
    /// so the field that refers to it shares that string instead of making another.
    var reference: Int32 = -1
}

/// A reusable recording of parser events, so a value can be read again once it is complete
/// (a field's array) or once its object's identity is known. Appending does not allocate once
/// the buffers have grown to the largest value seen.
struct EventTape {
    private(set) var tokens: [TapeToken] = []
    private(set) var storage: [UInt8] = []
    /// The id strings of the recorded references, in order.
    private(set) var references: [String] = []

    struct Mark {
        var tokens: Int
        var bytes: Int
        var references = 0
    }

    var mark: Mark { Mark(tokens: tokens.count, bytes: storage.count, references: references.count) }

    init() {
        tokens.reserveCapacity(256)
        storage.reserveCapacity(4096)
    }

    mutating func append(_ kind: FieldToken.Kind) {
        tokens.append(TapeToken(kind: kind, start: Int32(truncatingIfNeeded: storage.count), length: 0))
    }

    mutating func append(_ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer) {
        tokens.append(
            TapeToken(
                kind: kind, start: Int32(truncatingIfNeeded: storage.count),
                length: Int32(truncatingIfNeeded: bytes.count)))
        storage.append(contentsOf: bytes)
    }

    mutating func append(_ kind: FieldToken.Kind, _ string: String) {
        var s = string
        s.withUTF8 { append(kind, UnsafeRawBufferPointer($0)) }
    }

    /// Records a reference to a stored entity: its id's bytes, and the id string itself.
    mutating func appendReference(_ id: String) {
        append(.reference, id)
        tokens[tokens.count - 1].reference = Int32(truncatingIfNeeded: references.count)
        references.append(id)
    }

    mutating func truncate(to mark: Mark) {
        tokens.removeSubrange(mark.tokens...)
        storage.removeSubrange(mark.bytes...)
        if references.count > mark.references { references.removeSubrange(mark.references...) }
    }

    mutating func removeAll() {
        tokens.removeAll(keepingCapacity: true)
        storage.removeAll(keepingCapacity: true)
        references.removeAll(keepingCapacity: true)
    }

    /// Reads the tokens from `mark` to the end.
    func withReader<R, E: Error>(from mark: Mark, _ body: (inout FieldReader) throws(E) -> R) throws(E) -> R {
        try withReader(from: mark, to: tokens.count, body)
    }

    /// Reads the tokens from `mark` up to token index `end` (exclusive).
    func withReader<R, E: Error>(from mark: Mark, to end: Int, _ body: (inout FieldReader) throws(E) -> R) throws(E)
        -> R
    {
        let result: Result<R, E> = tokens.withUnsafeBufferPointer { t in
            storage.withUnsafeBytes { s in
                references.withUnsafeBufferPointer { r in
                    var reader = FieldReader(
                        tokens: UnsafeBufferPointer(rebasing: t[mark.tokens..<end]), storage: s, references: r)
                    do throws(E) { return .success(try body(&reader)) } catch { return .failure(error) }
                }
            }
        }
        return try result.get()
    }

    /// Calls `body` with one token's bytes (which must not change the tape meanwhile).
    func withBytes<R>(of token: TapeToken, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { s in
            try body(UnsafeRawBufferPointer(rebasing: s[Int(token.start)..<Int(token.start) + Int(token.length)]))
        }
    }

    /// The index of the token that closes the array or object opened at `index` (or the end).
    func matchingEnd(of index: Int) -> Int {
        var depth = 0
        var i = index
        while i < tokens.count {
            switch tokens[i].kind {
            case .beginArray, .beginObject: depth += 1
            case .endArray, .endObject:
                depth -= 1
                if depth == 0 { return i }
            default: break
            }
            i += 1
        }
        return tokens.count
    }

}
