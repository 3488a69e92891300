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
///
/// Every entity's first member goes on the tape and comes off it again, so tokens and bytes
/// live in buffers of its own: an append is a store and a count, a truncation a count.
struct EventTape: ~Copyable {
    private var tokenBase: UnsafeMutablePointer<TapeToken>
    private var tokenCapacity: Int
    /// The number of tokens recorded.
    private(set) var tokenCount = 0
    private var byteBase: UnsafeMutableRawPointer
    private var byteCapacity: Int
    /// The number of bytes recorded.
    private(set) var byteCount = 0
    /// The id strings of the recorded references, in order.
    private(set) var references: [String] = []

    struct Mark {
        var tokens: Int
        var bytes: Int
        var references = 0
    }

    var mark: Mark { Mark(tokens: tokenCount, bytes: byteCount, references: references.count) }

    init() {
        tokenCapacity = 256
        tokenBase = .allocate(capacity: tokenCapacity)
        byteCapacity = 4096
        byteBase = .allocate(byteCount: byteCapacity, alignment: 8)
    }

    deinit {
        tokenBase.deallocate()
        byteBase.deallocate()
    }

    /// Token `i` (below ``tokenCount``).
    @inline(__always)
    func token(_ i: Int) -> TapeToken {
        precondition(i >= 0 && i < tokenCount, "tape token out of range")
        return tokenBase[i]
    }

    @inline(__always)
    private mutating func appendToken(_ token: TapeToken) {
        if tokenCount == tokenCapacity { growTokens() }
        (tokenBase + tokenCount).initialize(to: token)
        tokenCount &+= 1
    }

    @inline(never)
    private mutating func growTokens() {
        let grown = UnsafeMutablePointer<TapeToken>.allocate(capacity: tokenCapacity * 2)
        grown.moveInitialize(from: tokenBase, count: tokenCount)
        tokenBase.deallocate()
        tokenBase = grown
        tokenCapacity *= 2
    }

    @inline(never)
    private mutating func growBytes(toHold needed: Int) {
        var capacity = byteCapacity * 2
        while capacity < needed { capacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        grown.copyMemory(from: byteBase, byteCount: byteCount)
        byteBase.deallocate()
        byteBase = grown
        byteCapacity = capacity
    }

    mutating func append(_ kind: FieldToken.Kind) {
        appendToken(TapeToken(kind: kind, start: Int32(truncatingIfNeeded: byteCount), length: 0))
    }

    mutating func append(_ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer) {
        appendToken(
            TapeToken(
                kind: kind, start: Int32(truncatingIfNeeded: byteCount), length: Int32(truncatingIfNeeded: bytes.count))
        )
        let end = byteCount &+ bytes.count
        if end > byteCapacity { growBytes(toHold: end) }
        if let source = bytes.baseAddress { (byteBase + byteCount).copyMemory(from: source, byteCount: bytes.count) }
        byteCount = end
    }

    mutating func append(_ kind: FieldToken.Kind, _ string: String) {
        // Read in place (a native or small string), without the copy that `withUTF8` needs.
        if string.utf8.withContiguousStorageIfAvailable({ append(kind, UnsafeRawBufferPointer($0)) }) != nil { return }
        var s = string
        s.withUTF8 { append(kind, UnsafeRawBufferPointer($0)) }
    }

    /// Records a reference to a stored entity: its id's bytes, and the id string itself.
    mutating func appendReference(_ id: String) {
        append(.reference, id)
        tokenBase[tokenCount - 1].reference = Int32(truncatingIfNeeded: references.count)
        references.append(id)
    }

    mutating func truncate(to mark: Mark) {
        precondition(mark.tokens <= tokenCount && mark.bytes <= byteCount, "truncating past the end of the tape")
        tokenCount = mark.tokens
        byteCount = mark.bytes
        if references.count > mark.references { references.removeSubrange(mark.references...) }
    }

    mutating func removeAll() {
        tokenCount = 0
        byteCount = 0
        references.removeAll(keepingCapacity: true)
    }

    /// Reads the tokens from `mark` to the end.
    func withReader<R, E: Error>(from mark: Mark, _ body: (inout FieldReader) throws(E) -> R) throws(E) -> R {
        try withReader(from: mark, to: tokenCount, body)
    }

    /// Reads the tokens from `mark` up to token index `end` (exclusive).
    func withReader<R, E: Error>(from mark: Mark, to end: Int, _ body: (inout FieldReader) throws(E) -> R) throws(E)
        -> R
    {
        precondition(mark.tokens <= end && end <= tokenCount, "tape range out of bounds")
        let result: Result<R, E> = references.withUnsafeBufferPointer { r in
            var reader = FieldReader(
                tokens: UnsafeBufferPointer(start: tokenBase + mark.tokens, count: end - mark.tokens),
                storage: UnsafeRawBufferPointer(start: byteBase, count: byteCount), references: r)
            do throws(E) { return .success(try body(&reader)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Calls `body` with one token's bytes (which must not change the tape meanwhile).
    func withBytes<R>(of token: TapeToken, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        precondition(Int(token.start) + Int(token.length) <= byteCount, "tape bytes out of range")
        return try body(UnsafeRawBufferPointer(start: byteBase + Int(token.start), count: Int(token.length)))
    }

    /// The index of the token that closes the array or object opened at `index` (or the end).
    func matchingEnd(of index: Int) -> Int {
        var depth = 0
        var i = index
        while i < tokenCount {
            switch tokenBase[i].kind {
            case .beginArray, .beginObject: depth += 1
            case .endArray, .endObject:
                depth -= 1
                if depth == 0 { return i }
            default: break
            }
            i += 1
        }
        return tokenCount
    }
}
