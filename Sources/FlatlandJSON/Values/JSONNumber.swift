#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A number as the parser saw it: its exact text, valid only during the handler call.
///
/// Nothing is converted until you ask, and every conversion is exact or fails with
/// ``JSONError/Code-swift.struct/number``: an id above 2^53 read with ``int64()`` never passes
/// through `Double`.
public struct JSONNumberText: ExactIntegerText {
    /// The number's text, exactly as in the input.
    public let bytes: JSONBytes

    /// Wraps number text that the caller keeps alive while the view is used.
    @inlinable
    public init(unsafeBuffer buffer: UnsafeRawBufferPointer) {
        self.bytes = JSONBytes(unsafeBuffer: buffer)
    }

    /// The text, copied.
    public var text: String { bytes.string }

    /// An owned copy, to keep beyond the handler call.
    public var number: JSONNumber { JSONNumber(unchecked: bytes.string) }

    /// Whether the text has neither a fraction nor an exponent.
    public var isInteger: Bool {
        for b in bytes.buffer where b == UInt8(ascii: ".") || b | 0x20 == UInt8(ascii: "e") {
            return false
        }
        return true
    }

    /// The exact `Int64`; `1e2` and `100.0` are accepted, `1.5` and out-of-range values fail.
    public func int64() throws(JSONError) -> Int64 { try NumberParsing.int64(bytes.buffer) }
    /// The exact `UInt64`.
    public func uint64() throws(JSONError) -> UInt64 { try NumberParsing.uint64(bytes.buffer) }
    /// The exact value as any fixed-width integer type.
    @inlinable
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) throws(JSONError) -> T {
        try exactInteger(type)
    }
    /// The error for an exact value outside `type`'s range.
    @usableFromInline
    func overflow(as type: Any.Type) -> JSONError { NumberParsing.overflow(bytes.buffer, "\(type)") }
    /// The correctly rounded `Double`; fails when the magnitude overflows (`1e400`).
    /// A value too small for `Double` (`1e-400`) rounds to zero, as IEEE 754 says.
    public func double() throws(JSONError) -> Double { try NumberParsing.double(bytes.buffer) }
    /// The exact `Decimal`; fails beyond 38 significant digits or `Decimal`'s exponent range.
    public func decimal() throws(JSONError) -> Decimal { try NumberParsing.decimal(bytes.buffer) }
}

/// A JSON number kept as its exact text, with the same exact conversions as ``JSONNumberText``.
///
/// Two numbers are equal when their texts are: `1` and `1.0` are different JSON texts.
public struct JSONNumber: Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExactIntegerText
{
    /// The number's text, a valid JSON number.
    public let text: String

    init(unchecked text: String) { self.text = text }

    /// Validates `text` as a JSON number (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    public init?(_ text: String) {
        var t = text
        let ok = t.withUTF8 { NumberParsing.split(UnsafeRawBufferPointer($0)) != nil }
        guard ok else { return nil }
        self.text = t
    }

    /// The number with this integer's decimal text.
    public init<T: BinaryInteger>(_ value: T) { self.text = String(value) }

    /// The shortest text that reads back as exactly `value`; nil for NaN and infinities,
    /// which JSON cannot express.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        if value == value.rounded(), abs(value) < 1e15 {
            self.text = value == 0 && value.sign == .minus ? "-0" : String(Int64(value))
        } else {
            // Swift's description is the shortest text that reads back exactly, but it writes
            // integral values below 2^53 with a ".0" that JSON does not need.
            let text = value.description
            self.text = text.hasSuffix(".0") ? String(text.dropLast(2)) : text
        }
    }

    public init(integerLiteral value: Int64) { self.init(value) }
    public init(floatLiteral value: Double) { self = JSONNumber(value) ?? JSONNumber(unchecked: "0") }

    public var description: String { text }

    private func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(JSONError) -> R) throws(JSONError) -> R {
        var t = text
        let r: Result<R, JSONError> = t.withUTF8 { utf8 in
            do throws(JSONError) { return .success(try body(UnsafeRawBufferPointer(utf8))) } catch {
                return .failure(error)
            }
        }
        return try r.get()
    }

    /// Whether the text has neither a fraction nor an exponent.
    public var isInteger: Bool { !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") } }
    /// The exact `Int64`.
    public func int64() throws(JSONError) -> Int64 { try withBytes(NumberParsing.int64) }
    /// The exact `UInt64`.
    public func uint64() throws(JSONError) -> UInt64 { try withBytes(NumberParsing.uint64) }
    /// The exact value as any fixed-width integer type.
    @inlinable
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) throws(JSONError) -> T {
        try exactInteger(type)
    }
    /// The error for an exact value outside `type`'s range.
    @usableFromInline
    func overflow(as type: Any.Type) -> JSONError {
        var t = text
        return t.withUTF8 { NumberParsing.overflow(UnsafeRawBufferPointer($0), "\(type)") }
    }
    /// The correctly rounded `Double`; fails on overflow.
    public func double() throws(JSONError) -> Double { try withBytes(NumberParsing.double) }
    /// The exact `Decimal`.
    public func decimal() throws(JSONError) -> Decimal { try withBytes(NumberParsing.decimal) }
}

/// Number text that converts exactly to `Int64` and `UInt64`: the conversion to any other
/// fixed-width integer type, shared by ``JSONNumberText`` and ``JSONNumber``.
@usableFromInline
protocol ExactIntegerText {
    func int64() throws(JSONError) -> Int64
    func uint64() throws(JSONError) -> UInt64
    /// The error for an exact value outside `type`'s range.
    func overflow(as type: Any.Type) -> JSONError
}

extension ExactIntegerText {
    /// Inlinable, so that the conversion is specialized for `T` where it is called: generic code
    /// behind a module boundary looks `T`'s conformances up at run time, for every number.
    @inlinable
    func exactInteger<T: FixedWidthInteger>(_ type: T.Type) throws(JSONError) -> T {
        if T.isSigned {
            if let r = T(exactly: try int64()) { return r }
        } else if let r = T(exactly: try uint64()) {
            return r
        }
        throw overflow(as: T.self)
    }
}
