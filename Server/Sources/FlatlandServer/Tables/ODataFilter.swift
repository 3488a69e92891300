@_spi(FlatlandInternal) import Flatland

/// A parsed OData `$filter`: the subset the table protocol's clients send.
///
/// Grammar (OData v3/v4, the part the official clients write):
/// ```
/// expr       = or
/// or         = and *( "or" and )
/// and        = unary *( "and" unary )
/// unary      = "not" unary / comparison
/// comparison = value [ ( "eq" / "ne" / "gt" / "ge" / "lt" / "le" ) value ]
/// value      = "(" expr ")" / call / literal / member
/// call       = ( "startswith" / "endswith" / "substringof" / "contains" / "tolower" / "toupper" ) "(" value *( "," value ) ")"
///            / "not" "(" expr ")"
/// literal    = string / number / "true" / "false" / "null"
///            / "datetimeoffset'" date "'" / "datetime'" date "'" / "cast(" date "," "Edm.DateTimeOffset" ")"
/// member     = identifier
/// ```
/// Anything else is an ``ODataFilterError`` with the byte offset where it went wrong.
indirect enum ODataFilter: Sendable, Equatable {
    case and(ODataFilter, ODataFilter)
    case or(ODataFilter, ODataFilter)
    case not(ODataFilter)
    case compare(ODataOperand, Comparison, ODataOperand)
    /// A boolean function: `startswith(a,b)`, `endswith(a,b)`, `contains(a,b)` (and
    /// `substringof(b,a)`, stored as `contains(a,b)`).
    case test(StringTest, ODataOperand, ODataOperand)
    /// A bare boolean member or literal (`complete`, `true`).
    case truth(ODataOperand)

    enum Comparison: String, Sendable, Equatable {
        case eq, ne, gt, ge, lt, le
    }

    enum StringTest: String, Sendable, Equatable {
        case startsWith = "startswith"
        case endsWith = "endswith"
        case contains
    }

    /// Parses `text`.
    static func parse(_ text: String) throws(ODataFilterError) -> ODataFilter {
        var parser = ODataFilterParser(text)
        let filter = try parser.expression(depth: 0)
        try parser.end()
        return filter
    }
}

/// A value in a filter.
indirect enum ODataOperand: Sendable, Equatable {
    case member(String)
    case string(String)
    /// A number as written (`12`, `-3.5`, `1e3`), and whether it is an integer.
    case number(String, isInteger: Bool)
    case bool(Bool)
    case null
    /// A date and time: microseconds since 1970-01-01T00:00:00Z.
    case date(microseconds: Int64)
    case toLower(ODataOperand)
    case toUpper(ODataOperand)
}

/// A `$filter` that cannot be parsed: what and where.
struct ODataFilterError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    /// The byte offset in the filter text where the problem is.
    var offset: Int
    var description: String { "$filter: \(message) at offset \(offset)" }
}

struct ODataFilterParser {
    private let bytes: [UInt8]
    private var i = 0
    /// Deeper nesting is refused, so that a hostile filter cannot exhaust the stack.
    static let maxDepth = 64

    init(_ text: String) { bytes = Array(text.utf8) }

    private func fail(_ message: String, at offset: Int? = nil) -> ODataFilterError {
        ODataFilterError(message: message, offset: offset ?? i)
    }

    private mutating func skipSpaces() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 { i += 1 }
    }

    mutating func end() throws(ODataFilterError) {
        skipSpaces()
        guard i == bytes.count else {
            throw fail("unexpected '\(String(decoding: bytes[i...].prefix(16), as: UTF8.self))'")
        }
    }

    private static func isIdentifierStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
    }
    private static func isIdentifierByte(_ b: UInt8) -> Bool {
        isIdentifierStart(b) || (b >= 0x30 && b <= 0x39) || b == 0x2E
    }

    /// The identifier at the cursor, without moving.
    private func peekWord() -> String? {
        guard i < bytes.count, Self.isIdentifierStart(bytes[i]) else { return nil }
        var j = i
        while j < bytes.count, Self.isIdentifierByte(bytes[j]) { j += 1 }
        return String(decoding: bytes[i..<j], as: UTF8.self)
    }

    private mutating func takeWord(_ word: String) -> Bool {
        skipSpaces()
        guard let w = peekWord(), w == word else { return false }
        let end = i + w.utf8.count
        // A keyword is a whole word, followed by a space, a parenthesis or the end.
        if end < bytes.count, bytes[end] != 0x20, bytes[end] != 0x28, bytes[end] != 0x09, bytes[end] != 0x29 {
            return false
        }
        i = end
        return true
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(ODataFilterError) {
        skipSpaces()
        guard i < bytes.count, bytes[i] == byte else { throw fail("expected \(what)") }
        i += 1
    }

    mutating func expression(depth: Int) throws(ODataFilterError) -> ODataFilter {
        guard depth < Self.maxDepth else { throw fail("the filter nests deeper than \(Self.maxDepth)") }
        var left = try conjunction(depth: depth)
        while takeWord("or") { left = .or(left, try conjunction(depth: depth)) }
        return left
    }

    private mutating func conjunction(depth: Int) throws(ODataFilterError) -> ODataFilter {
        var left = try unary(depth: depth)
        while takeWord("and") { left = .and(left, try unary(depth: depth)) }
        return left
    }

    private mutating func unary(depth: Int) throws(ODataFilterError) -> ODataFilter {
        guard depth < Self.maxDepth else { throw fail("the filter nests deeper than \(Self.maxDepth)") }
        if takeWord("not") { return .not(try unary(depth: depth + 1)) }
        return try comparison(depth: depth)
    }

    private mutating func comparison(depth: Int) throws(ODataFilterError) -> ODataFilter {
        skipSpaces()
        let start = i
        // A parenthesized boolean expression.
        if i < bytes.count, bytes[i] == 0x28 {
            i += 1
            let inner = try expression(depth: depth + 1)
            try expect(0x29, "')'")
            return try comparisonTail(.parenthesized(inner), depth: depth, start: start)
        }
        if let test = try stringTest(depth: depth) { return test }
        let left = try operand(depth: depth)
        return try comparisonTail(.operand(left), depth: depth, start: start)
    }

    private enum Left {
        case parenthesized(ODataFilter)
        case operand(ODataOperand)
    }

    private mutating func comparisonTail(_ left: Left, depth: Int, start: Int) throws(ODataFilterError) -> ODataFilter {
        skipSpaces()
        let opStart = i
        for op in [ODataFilter.Comparison.eq, .ne, .gt, .ge, .lt, .le] where takeWord(op.rawValue) {
            guard case .operand(let l) = left else {
                throw fail("a comparison needs a value on its left, not a condition", at: opStart)
            }
            let right = try operand(depth: depth)
            return .compare(l, op, right)
        }
        switch left {
        case .parenthesized(let f): return f
        case .operand(let o):
            switch o {
            case .member, .bool: return .truth(o)
            default: throw fail("a condition was expected", at: start)
            }
        }
    }

    private mutating func stringTest(depth: Int) throws(ODataFilterError) -> ODataFilter? {
        skipSpaces()
        guard let word = peekWord()?.lowercased() else { return nil }
        let test: ODataFilter.StringTest
        var swapped = false
        switch word {
        case "startswith": test = .startsWith
        case "endswith": test = .endsWith
        case "contains": test = .contains
        case "substringof":
            test = .contains
            swapped = true
        default: return nil
        }
        let save = i
        i += word.utf8.count
        skipSpaces()
        guard i < bytes.count, bytes[i] == 0x28 else {
            i = save
            return nil
        }
        i += 1
        let a = try operand(depth: depth + 1)
        try expect(0x2C, "','")
        let b = try operand(depth: depth + 1)
        try expect(0x29, "')'")
        return swapped ? .test(test, b, a) : .test(test, a, b)
    }

    mutating func operand(depth: Int) throws(ODataFilterError) -> ODataOperand {
        guard depth < Self.maxDepth else { throw fail("the filter nests deeper than \(Self.maxDepth)") }
        skipSpaces()
        guard i < bytes.count else { throw fail("a value was expected") }
        let b = bytes[i]
        if b == 0x27 { return .string(try quoted()) }
        if b == 0x2D || (b >= 0x30 && b <= 0x39) { return try number() }
        if b == 0x28 {
            i += 1
            let inner = try operand(depth: depth + 1)
            try expect(0x29, "')'")
            return inner
        }
        guard let word = peekWord() else {
            throw fail("unexpected '\(String(decoding: bytes[i...].prefix(16), as: UTF8.self))'")
        }
        let start = i
        i += word.utf8.count
        switch word {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        case "datetimeoffset", "datetime":
            guard i < bytes.count, bytes[i] == 0x27 else { throw fail("\(word) needs a quoted date", at: start) }
            let text = try quoted()
            return .date(microseconds: try date(text, at: start))
        case "cast":
            try expect(0x28, "'(' after cast")
            skipSpaces()
            let dateStart = i
            while i < bytes.count, bytes[i] != 0x2C, bytes[i] != 0x29 { i += 1 }
            var text = String(decoding: bytes[dateStart..<i], as: UTF8.self)
            if text.hasPrefix("'"), text.hasSuffix("'"), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
            try expect(0x2C, "',' in cast")
            skipSpaces()
            guard takeWord("Edm.DateTimeOffset") else { throw fail("only cast(…,Edm.DateTimeOffset) is supported") }
            try expect(0x29, "')'")
            return .date(microseconds: try date(text, at: dateStart))
        case "tolower", "toupper":
            try expect(0x28, "'(' after \(word)")
            let inner = try operand(depth: depth + 1)
            try expect(0x29, "')'")
            return word == "tolower" ? .toLower(inner) : .toUpper(inner)
        default:
            skipSpaces()
            if i < bytes.count, bytes[i] == 0x28 {
                throw fail("the function '\(word)' is not supported", at: start)
            }
            guard !word.contains(".") else { throw fail("'\(word)' is not a field name", at: start) }
            return .member(word)
        }
    }

    /// A single-quoted string; `''` is one quote.
    private mutating func quoted() throws(ODataFilterError) -> String {
        let start = i
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("a string is not closed", at: start) }
            if bytes[i] == 0x27 {
                if i + 1 < bytes.count, bytes[i + 1] == 0x27 {
                    out.append(0x27)
                    i += 2
                    continue
                }
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            out.append(bytes[i])
            i += 1
        }
    }

    private mutating func number() throws(ODataFilterError) -> ODataOperand {
        let start = i
        if bytes[i] == 0x2D { i += 1 }
        var digits = 0
        var isInteger = true
        while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 {
            i += 1
            digits += 1
        }
        if i < bytes.count, bytes[i] == 0x2E {
            isInteger = false
            i += 1
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
        }
        if i < bytes.count, bytes[i] == 0x65 || bytes[i] == 0x45 {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == 0x2B || bytes[i] == 0x2D { i += 1 }
            let expStart = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
            guard i > expStart else { throw fail("a number's exponent has no digits", at: start) }
        }
        // OData's type suffixes (1.5d, 2m, 3L) are read as the number.
        var end = i
        if i < bytes.count, [0x64, 0x44, 0x6D, 0x4D, 0x6C, 0x4C, 0x66, 0x46].contains(bytes[i]) {
            if bytes[i] == 0x6C || bytes[i] == 0x4C { end = i } else { isInteger = false }
            i += 1
        }
        guard digits > 0 else { throw fail("a number was expected", at: start) }
        let text = String(decoding: bytes[start..<end], as: UTF8.self)
        guard isInteger ? Int64(text) != nil : Double(text).map({ $0.isFinite }) ?? false else {
            throw fail("the number \(text) is out of range", at: start)
        }
        return .number(text, isInteger: isInteger)
    }

    private func date(_ text: String, at offset: Int) throws(ODataFilterError) -> Int64 {
        var text = text
        let instant = text.withUTF8 { ISO8601.instant(UnsafeRawBufferPointer($0), requiresZone: false) }
        guard let instant else {
            throw fail("'\(text)' is not a date and time with a zone", at: offset)
        }
        return Int64(instant.seconds) * 1_000_000 + Int64(instant.nanoseconds / 1000)
    }
}
