/// The one JSON writer: request bodies, dumps and encoded entities all go through it.
///
/// It appends UTF-8 to ``bytes`` and puts commas and colons where they belong, so callers only
/// say what comes next. Strings are escaped as RFC 8259 requires (`"`, `\`, and control
/// characters; everything else is written as UTF-8).
///
/// ```swift
/// var writer = JSONWriter()
/// writer.beginObject()
/// writer.key("name"); writer.string("Ada")
/// writer.key("age"); writer.number(36)
/// writer.endObject()
/// // writer.string == #"{"name":"Ada","age":36}"#
/// ```
public struct JSONWriter: Sendable {
    /// The output so far.
    public private(set) var bytes: [UInt8]
    /// Whether to indent with two spaces and put each member on its own line.
    public var pretty: Bool
    /// Whether a comma is due before the next value or key, per open level.
    private var needsComma: [Bool] = [false]
    private var afterKey = false
    /// Whether ``bytes`` gets the store's token encoding (``JSONTokenEncoding``) instead of JSON
    /// text.
    package private(set) var writesTokens = false
    /// In the token encoding: how many containers are open, and the most that were at once.
    private var tokenDepth = 0
    package private(set) var deepestTokenDepth = 0
    /// The first value written that will not read back as it was, in words: a `Double` JSON
    /// cannot express (NaN, an infinity, written as `null`), or what a caller noted with
    /// ``noteUnreadable(_:)``. Nil when there was none.
    package private(set) var unreadableValue: String?

    /// Notes that the value just written will not read back as it was (see ``unreadableValue``).
    package mutating func noteUnreadable(_ what: @autoclosure () -> String) {
        if unreadableValue == nil { unreadableValue = what() }
    }

    /// Creates an empty writer.
    public init(pretty: Bool = false, capacity: Int = 256) {
        self.pretty = pretty
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// A writer of the store's token encoding instead of JSON text: the same calls, the same
    /// values, written as ``JSONTokenEncoding`` tokens (no escaping, no punctuation).
    /// `header` is written first, as it is.
    package init(tokensWithCapacity capacity: Int, header: UInt8) {
        self.init(capacity: capacity)
        writesTokens = true
        bytes.append(header)
    }

    /// A token of the token encoding: its kind, and for a key, string or number its length and
    /// bytes.
    private mutating func token(_ kind: UInt8, _ utf8: UnsafeRawBufferPointer) {
        bytes.append(kind)
        var n = utf8.count
        while n >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: n) | 0x80)
            n >>= 7
        }
        bytes.append(UInt8(n))
        bytes.append(contentsOf: utf8)
    }

    /// A container's begin token, counted in ``deepestTokenDepth``.
    private mutating func beginToken(_ kind: UInt8) {
        tokenDepth += 1
        if tokenDepth > deepestTokenDepth { deepestTokenDepth = tokenDepth }
        bytes.append(kind)
    }

    private mutating func token(_ kind: UInt8, _ text: String) {
        var text = text
        text.withUTF8 { token(kind, UnsafeRawBufferPointer($0)) }
    }

    /// The output so far as a string.
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// Forgets the output, keeping the buffer's capacity.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        tokenDepth = 0
        deepestTokenDepth = 0
        unreadableValue = nil
        needsComma = [false]
        afterKey = false
    }

    private mutating func newline() {
        bytes.append(0x0A)
        for _ in 1..<needsComma.count { bytes.append(contentsOf: [0x20, 0x20]) }
    }

    private mutating func beforeValue() {
        if afterKey {
            afterKey = false
            return
        }
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
        if pretty, needsComma.count > 1 { newline() }
    }

    /// Starts an object: `{`.
    public mutating func beginObject() {
        if writesTokens { return beginToken(JSONTokenEncoding.beginObject) }
        beforeValue()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    /// Ends an object: `}`.
    public mutating func endObject() {
        if writesTokens {
            tokenDepth -= 1
            return bytes.append(JSONTokenEncoding.endObject)
        }
        close(UInt8(ascii: "}"))
    }

    /// Starts an array: `[`.
    public mutating func beginArray() {
        if writesTokens { return beginToken(JSONTokenEncoding.beginArray) }
        beforeValue()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    /// Ends an array: `]`.
    public mutating func endArray() {
        if writesTokens {
            tokenDepth -= 1
            return bytes.append(JSONTokenEncoding.endArray)
        }
        close(UInt8(ascii: "]"))
    }

    private mutating func close(_ bracket: UInt8) {
        let hadMembers = needsComma.removeLast()
        if pretty, hadMembers { newline() }
        bytes.append(bracket)
    }

    /// An object key; the next call writes its value.
    public mutating func key(_ key: String) {
        var key = key
        key.withUTF8 { self.key(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// A key given as its UTF-8 bytes, which must be well-formed (a parser's or a `String`'s).
    package mutating func key(utf8: UnsafeRawBufferPointer) {
        if writesTokens { return token(JSONTokenEncoding.key, utf8) }
        beforeValue()
        appendEscaped(utf8)
        bytes.append(UInt8(ascii: ":"))
        if pretty { bytes.append(0x20) }
        afterKey = true
    }

    /// A string value.
    public mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { string(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// A string value given as its UTF-8 bytes, which must be well-formed (a parser's or a
    /// `String`'s).
    package mutating func string(utf8: UnsafeRawBufferPointer) {
        if writesTokens { return token(JSONTokenEncoding.string, utf8) }
        beforeValue()
        appendEscaped(utf8)
    }

    /// A number, written exactly as its text.
    public mutating func number(_ value: JSONNumber) {
        if writesTokens { return token(JSONTokenEncoding.number, value.text) }
        beforeValue()
        bytes.append(contentsOf: value.text.utf8)
    }

    /// A number given as its text, which must be a JSON number as a parser delivered it.
    package mutating func number(text: UnsafeRawBufferPointer) {
        if writesTokens { return token(JSONTokenEncoding.number, text) }
        beforeValue()
        bytes.append(contentsOf: text)
    }

    /// An integer.
    public mutating func number<T: BinaryInteger>(_ value: T) { number(JSONNumber(value)) }

    /// A `Double`, in its shortest exact form; NaN and infinities, which JSON cannot express,
    /// are written as `null`.
    public mutating func number(_ value: Double) {
        if let n = JSONNumber(value) {
            number(n)
        } else {
            noteUnreadable("a number JSON cannot express (\(value))")
            null()
        }
    }

    /// `true` or `false`.
    public mutating func bool(_ value: Bool) {
        if writesTokens { return bytes.append(value ? JSONTokenEncoding.true : JSONTokenEncoding.false) }
        beforeValue()
        if value { bytes.append(contentsOf: "true".utf8) } else { bytes.append(contentsOf: "false".utf8) }
    }

    /// `null`.
    public mutating func null() {
        if writesTokens { return bytes.append(JSONTokenEncoding.null) }
        beforeValue()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
    }

    /// A value already written as JSON, appended as it is. Only for text this writer wrote (it
    /// is not checked).
    @_spi(FlatlandInternal) public mutating func json(value utf8: [UInt8]) {
        if writesTokens {
            // (Text this writer wrote: it parses.)
            if let parsed = try? JSONValue(parsing: utf8) { value(parsed) } else { null() }
            return
        }
        beforeValue()
        bytes.append(contentsOf: utf8)
    }

    /// The members of an object already written as compact JSON (`{…}`, as this writer writes
    /// one), appended inside the object begun here. False, and nothing written, when `text` is
    /// not `{…}` or the writer is pretty. Only for text this writer wrote: the members are not
    /// checked.
    @_spi(FlatlandInternal) public mutating func json(membersOf text: String) -> Bool {
        guard !pretty, !afterKey, !writesTokens else { return false }
        var text = text
        return text.withUTF8 { utf8 in
            func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
            var lower = 0
            var upper = utf8.count
            while lower < upper, isSpace(utf8[lower]) { lower += 1 }
            while upper > lower, isSpace(utf8[upper - 1]) { upper -= 1 }
            guard upper - lower >= 2, utf8[lower] == UInt8(ascii: "{"), utf8[upper - 1] == UInt8(ascii: "}") else {
                return false
            }
            lower += 1
            upper -= 1
            while lower < upper, isSpace(utf8[lower]) { lower += 1 }
            guard lower < upper else { return true }
            if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
            needsComma[needsComma.count - 1] = true
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[lower..<upper]))
            return true
        }
    }

    /// Any ``JSONValue``, recursively.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let n): number(n)
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items { self.value(item) }
            endArray()
        case .object(let object):
            beginObject()
            for member in object.members {
                key(member.key)
                self.value(member.value)
            }
            endObject()
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The string in quotes, escaped. Runs of bytes that need no escape (nearly all of them)
    /// are copied whole, not byte by byte: on a table server's list and a store's record
    /// encoding, this is the writer's hottest loop.
    private mutating func appendEscaped(_ utf8: UnsafeRawBufferPointer) {
        bytes.append(UInt8(ascii: "\""))
        var run = 0
        for i in utf8.indices {
            let b = utf8[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            if run < i { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[run..<i])) }
            appendEscape(of: b)
            run = i + 1
        }
        if run < utf8.count { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: utf8[run...])) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The escape of one byte that JSON does not allow bare in a string.
    private mutating func appendEscape(of b: UInt8) {
        switch b {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
        case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
        case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
        case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
        default:
            bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
            bytes.append(Self.hexDigits[Int(b >> 4)])
            bytes.append(Self.hexDigits[Int(b & 15)])
        }
    }
}

extension JSONValue {
    /// The value as compact JSON text (or indented, with `pretty`).
    public func jsonString(pretty: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty)
        writer.value(self)
        return writer.string
    }

    /// The value as compact UTF-8 JSON.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }
}
