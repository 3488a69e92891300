/// A transient view of UTF-8 bytes handed to a ``JSONEventHandler``: a key or a string value,
/// already unescaped.
///
/// The bytes belong to the parser and are valid only during the handler call that received
/// them; take ``string`` or ``array`` to keep them. Comparing with a `String` or `StaticString`
/// does not allocate, which is how a handler matches keys on its hot path.
public struct JSONBytes {
    /// The bytes themselves, valid only during the handler call.
    public let buffer: UnsafeRawBufferPointer

    /// Wraps bytes that the caller keeps alive while the view is used.
    @inlinable
    public init(unsafeBuffer buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    /// The number of bytes.
    @inlinable public var count: Int { buffer.count }

    /// Whether there are no bytes.
    @inlinable public var isEmpty: Bool { buffer.isEmpty }

    /// The byte at `index` (0-based).
    @inlinable public subscript(index: Int) -> UInt8 { buffer[index] }

    /// A copy as a `String`. The parser has already checked (or repaired) the UTF-8.
    @inlinable public var string: String { String(decoding: buffer, as: UTF8.self) }

    /// A copy of the bytes.
    @inlinable public var array: [UInt8] { Array(buffer) }

    /// A copy as a `String` that skips `String(decoding:as:)`'s second check of the UTF-8, which
    /// is most of the cost of making a string that is not ASCII.
    ///
    /// Only for bytes a ``JSONStreamParser`` delivered, or copies of them: it hands its handler
    /// well-formed UTF-8 only (checked by its scanner, or repaired when the options ask for it),
    /// and its fuzzer traps on any string or key that is not. Debug builds check again here.
    @inlinable
    package var parsedString: String { String(parsedUTF8: buffer) }

    /// Whether the bytes equal the UTF-8 of `other`.
    @inlinable
    public func equals(_ other: StaticString) -> Bool {
        guard other.hasPointerRepresentation else { return string == other.description }
        let n = other.utf8CodeUnitCount
        guard n == buffer.count else { return false }
        if n == 0 { return true }
        return memoryEquals(buffer.baseAddress!, UnsafeRawPointer(other.utf8Start), n)
    }

    /// Whether the bytes equal the UTF-8 of `other`.
    @inlinable
    public func equals(_ other: String) -> Bool {
        func equals(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
            guard utf8.count == buffer.count else { return false }
            if utf8.isEmpty { return true }
            return memoryEquals(buffer.baseAddress!, UnsafeRawPointer(utf8.baseAddress!), utf8.count)
        }
        // Read in place (a native or small string), without the copy that `withUTF8` needs.
        if let result = other.utf8.withContiguousStorageIfAvailable(equals) { return result }
        var other = other
        return other.withUTF8(equals)
    }

    /// Whether the bytes equal `other`.
    @inlinable
    public func equals(_ other: UnsafeRawBufferPointer) -> Bool {
        guard other.count == buffer.count else { return false }
        if other.isEmpty { return true }
        return memoryEquals(buffer.baseAddress!, other.baseAddress!, other.count)
    }

    /// Compares with a `String` without allocating.
    @inlinable
    public static func == (lhs: JSONBytes, rhs: String) -> Bool { lhs.equals(rhs) }
}

@inlinable
func memoryEquals(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    var i = 0
    while i &+ 8 <= count {
        if a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            != b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        {
            return false
        }
        i &+= 8
    }
    while i < count {
        if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) {
            return false
        }
        i &+= 1
    }
    return true
}

extension String {
    /// A string of UTF-8 that a ``JSONStreamParser`` delivered: see ``JSONBytes/parsedString``.
    @inlinable
    package init(parsedUTF8 bytes: UnsafeRawBufferPointer) {
        assert(String(validating: bytes, as: UTF8.self) != nil, "the parser delivered ill-formed UTF-8")
        if #available(macOS 26, iOS 26, watchOS 26, tvOS 26, visionOS 26, *) {
            self = String(copying: UTF8Span(unchecked: Span(_unsafeBytes: bytes)))
        } else {
            self = String(decoding: bytes, as: UTF8.self)
        }
    }
}
