import FlatlandJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A type that a declared field can hold: it decodes from a ``FieldReader`` and encodes with
/// FlatlandJSON's one `JSONWriter`, and decoding what it encoded gives the same value.
///
/// Flatland provides conformances for `String`, `Bool`, the integer types, `Double`, `Float`,
/// `Decimal`, `Date` (ISO 8601 with fractional seconds), `URL`, ``EntityID``, `JSONValue`,
/// `Optional`, `Array`, and raw-value enums (declare `enum Kind: String, FieldValue {}`).
/// Nested value structs conform through ``FieldRecord``.
public protocol FieldValue: Sendable, Equatable {
    /// Reads one value.
    static func decode(from reader: inout FieldReader) throws(FieldError) -> Self
    /// Reads one value into `value`, which holds the field's value so far.
    ///
    /// The ingestor decodes through this, so a type can keep what it holds when the new value
    /// is the same: `String` keeps its storage when the text is unchanged, so an entity met
    /// again in one response allocates nothing for the text it repeats. On an error `value` is
    /// left as it was. The default replaces `value` with ``decode(from:)``.
    static func decode(from reader: inout FieldReader, updating value: inout Self) throws(FieldError)
    /// Writes the value.
    func encode(to writer: inout JSONWriter)
}

extension FieldValue {
    @inlinable
    public static func decode(from reader: inout FieldReader, updating value: inout Self) throws(FieldError) {
        value = try decode(from: &reader)
    }
}

extension String: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> String {
        try reader.readString()
    }
    public static func decode(from reader: inout FieldReader, updating value: inout String) throws(FieldError) {
        try reader.readString(updating: &value)
    }
    public func encode(to writer: inout JSONWriter) { writer.string(self) }
}

extension Bool: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Bool { try reader.readBool() }
    public func encode(to writer: inout JSONWriter) { writer.bool(self) }
}

/// Shared decoding for the integer types: exact, or a clear error.
@inline(__always)
func decodeInteger<T: FixedWidthInteger>(_ reader: inout FieldReader, _ type: T.Type) throws(FieldError) -> T {
    let n = try reader.readNumber(expected: "integer")
    do throws(JSONError) {
        return try n.integer(as: T.self)
    } catch {
        throw FieldError(error.message)
    }
}

extension Int: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Int {
        try decodeInteger(&reader, Int.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension Int64: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Int64 {
        try decodeInteger(&reader, Int64.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension Int32: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Int32 {
        try decodeInteger(&reader, Int32.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension Int16: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Int16 {
        try decodeInteger(&reader, Int16.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension Int8: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Int8 {
        try decodeInteger(&reader, Int8.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension UInt: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> UInt {
        try decodeInteger(&reader, UInt.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension UInt64: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> UInt64 {
        try decodeInteger(&reader, UInt64.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension UInt32: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> UInt32 {
        try decodeInteger(&reader, UInt32.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension UInt16: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> UInt16 {
        try decodeInteger(&reader, UInt16.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension UInt8: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> UInt8 {
        try decodeInteger(&reader, UInt8.self)
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension Double: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Double {
        let n = try reader.readNumber()
        do throws(JSONError) { return try n.double() } catch { throw FieldError(error.message) }
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension Float: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Float {
        Float(try Double.decode(from: &reader))
    }
    public func encode(to writer: inout JSONWriter) { writer.number(Double(self)) }
}

extension Decimal: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Decimal {
        let n = try reader.readNumber()
        do throws(JSONError) { return try n.decimal() } catch { throw FieldError(error.message) }
    }
    public func encode(to writer: inout JSONWriter) {
        if let n = JSONNumber("\(self)") {
            writer.number(n)
        } else {
            writer.noteUnreadable("a number JSON cannot express (\(self))")
            writer.null()
        }
    }
}

extension URL: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> URL {
        let s = try reader.readString()
        guard let url = URL(string: s) else { throw FieldError("expected URL, found string that is not a URL") }
        return url
    }
    public func encode(to writer: inout JSONWriter) { writer.string(absoluteString) }
}

extension Date: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Date {
        let t = try reader.next()
        guard t.kind == .string else { throw .mismatch(expected: "ISO 8601 date string", found: t) }
        guard let date = ISO8601.parse(t.bytes.buffer) else {
            throw FieldError("expected ISO 8601 date, found \"\(t.bytes.string)\"")
        }
        return date
    }
    public func encode(to writer: inout JSONWriter) {
        let t = timeIntervalSince1970
        guard writer.writesTokens, !(t >= Self.firstISOSecond && t < Self.endISOSecond) else {
            // JSON text (a request body) writes years past 9999 and before 0 padded; a date with
            // no calendar year at all (not finite, or past a million millennia) is written as
            // `null`, as a `Double` JSON cannot express is.
            guard t.isFinite, abs(t) < Self.formattableSeconds else {
                writer.noteUnreadable("a date with no calendar year (\(t) s since 1970)")
                return writer.null()
            }
            return writer.string(ISO8601.format(self))
        }
        // In a store's record, a date the text of a four-digit year in UTC cannot carry: one a
        // response's time zone offset took past the years 0 to 9999 (`9999-12-31T23:59:59-05:00`)
        // is written at such an offset, which the decoder reads back; any other would not read
        // back (nor, not finite or past Int's seconds, be formatted at all).
        if let text = Self.formatAtOffset(t) { return writer.string(text) }
        writer.noteUnreadable("a date outside the years 0 to 9999 (\(t) s since 1970)")
        writer.null()
    }

    /// 0000-01-01T00:00:00Z, and (less half a microsecond, which the format rounds to a whole
    /// one) 10000-01-01T00:00:00Z, in seconds since 1970.
    static let firstISOSecond = Double(ISO8601.daysFromCivil(0, 1, 1) * 86_400)
    static let endISOSecond = Double(ISO8601.daysFromCivil(10_000, 1, 1) * 86_400) - 0.000_000_5
    /// Seconds since 1970 beyond which a date is not formatted (about 31 billion years): the
    /// calendar arithmetic stays far from `Int`'s limits.
    static let formattableSeconds = 1e18
    /// The largest offset the decoder reads: `±99:59`.
    static let maxOffsetSeconds = 99 * 3600 + 59 * 60

    /// `t` (outside the years 0 to 9999 in UTC) as a local time of year 9999 or 0 at the
    /// smallest whole-minute offset that makes it one; nil when no offset the decoder reads does.
    static func formatAtOffset(_ t: Double) -> String? {
        let reach = Double(maxOffsetSeconds + 1)
        guard t.isFinite, t >= firstISOSecond - reach, t < endISOSecond + reach else { return nil }
        var seconds = Int(t.rounded(.down))
        var micros = Int(((t - Double(seconds)) * 1_000_000).rounded())
        if micros >= 1_000_000 {
            seconds += 1
            micros -= 1_000_000
        }
        let first = ISO8601.daysFromCivil(0, 1, 1) * 86_400
        let end = ISO8601.daysFromCivil(10_000, 1, 1) * 86_400
        let offset: Int
        let sign: String
        if seconds >= end {
            offset = (seconds - end + 1 + 59) / 60 * 60
            sign = "-"
        } else if seconds < first {
            offset = (first - seconds + 59) / 60 * 60
            sign = "+"
        } else {
            return ISO8601.format(Date(timeIntervalSince1970: t))
        }
        guard offset <= maxOffsetSeconds else { return nil }
        let local = sign == "-" ? seconds - offset : seconds + offset
        let hours = offset / 3600
        let minutes = offset / 60 % 60
        let suffix = sign + (hours < 10 ? "0" : "") + "\(hours):" + (minutes < 10 ? "0" : "") + "\(minutes)"
        return micros % 1000 == 0
            ? ISO8601.format(seconds: local, fraction: micros / 1000, digits: 3, suffix: suffix)
            : ISO8601.format(seconds: local, fraction: micros, digits: 6, suffix: suffix)
    }
}

extension JSONValue: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> JSONValue {
        try reader.readJSONValue()
    }
    public func encode(to writer: inout JSONWriter) { writer.value(self) }
}

extension JSONNumber: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> JSONNumber {
        try reader.readNumber().number
    }
    public func encode(to writer: inout JSONWriter) { writer.number(self) }
}

extension Optional: FieldValue where Wrapped: FieldValue {
    /// `null` decodes as nil: that is how a response clears an optional field.
    @inlinable
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Wrapped? {
        if try reader.readNull() { return nil }
        return try Wrapped.decode(from: &reader)
    }
    @inlinable
    public static func decode(from reader: inout FieldReader, updating value: inout Wrapped?) throws(FieldError) {
        if try reader.readNull() {
            value = nil
        } else if value != nil {
            try Wrapped.decode(from: &reader, updating: &value!)
        } else {
            value = try Wrapped.decode(from: &reader)
        }
    }
    public func encode(to writer: inout JSONWriter) {
        if let self { self.encode(to: &writer) } else { writer.null() }
    }
}

extension Array: FieldValue where Element: FieldValue {
    @inlinable
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> [Element] {
        var items: [Element] = []
        items.reserveCapacity(reader.elementCountOfNextArray())
        try reader.readArray { (r) throws(FieldError) in items.append(try Element.decode(from: &r)) }
        return items
    }
    public func encode(to writer: inout JSONWriter) {
        writer.beginArray()
        for item in self { item.encode(to: &writer) }
        writer.endArray()
    }
}

extension FieldValue where Self: RawRepresentable, RawValue: FieldValue {
    /// A raw-value enum decodes its raw value and fails on an unknown case.
    @inlinable
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Self {
        let raw = try RawValue.decode(from: &reader)
        guard let value = Self(rawValue: raw) else { throw FieldError("unknown \(Self.self) value \(raw)") }
        return value
    }
    public func encode(to writer: inout JSONWriter) { rawValue.encode(to: &writer) }
}

extension EntityID: FieldValue {
    /// An id decodes from a string id or from a nested entity that the ingestor stored.
    @inlinable
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> EntityID<E> {
        let t = try reader.next()
        guard t.kind == .string || t.kind == .reference else {
            throw .mismatch(expected: "\(E.prefix)- id or \(E.self) object", found: t)
        }
        let prefixLength = EntityIDFormat.prefixLength(t.bytes.buffer)
        guard let prefixLength, t.bytes.buffer.count > prefixLength,
            JSONBytes(unsafeBuffer: UnsafeRawBufferPointer(rebasing: t.bytes.buffer[0..<prefixLength])).equals(E.prefix)
        else {
            throw FieldError("expected \(E.prefix)- id, found \"\(t.bytes.string)\"")
        }
        // A nested entity's id: the same string as the stored record's, shared.
        if t.kind == .reference, let id = reader.referenceOfLastToken() { return EntityID(id) }
        return EntityID(t.bytes.string)
    }
    public func encode(to writer: inout JSONWriter) { writer.string(rawValue) }
}

/// A nested value struct with declared fields, decoded from and encoded to a JSON object.
///
/// ```swift
/// struct Address: FieldRecord {
///     var city = ""
///     var zip: String? = nil
///     init() {}
///     static let fields: [Field<Address>] = [Field("city", \.city), Field("zip", \.zip)]
/// }
/// ```
public protocol FieldRecord: FieldValue {
    /// An empty value that decoding fills in.
    init()
    /// The JSON fields of this type.
    static var fields: [Field<Self>] { get }
}

extension FieldRecord {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> Self {
        var value = Self()
        let fields = Self.fields
        try reader.readObject { (key, r) throws(FieldError) in
            if let field = fields.first(where: { key.equals($0.key) }) {
                try field.decode(&r, &value)
            } else {
                try r.skipValue()
            }
        }
        return value
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        for field in Self.fields {
            writer.key(field.key)
            field.encode(self, &writer)
        }
        writer.endObject()
    }
}
