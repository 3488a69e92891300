@_spi(FlatlandInternal) import Flatland

/// A parsed OData `$filter`: the expressions the Datasync server (OData v4) and the Azure Mobile
/// servers (v1/v2) accept.
///
/// Grammar, lowest precedence first (keywords are case-sensitive, as in OData):
/// ```
/// or         = and *( "or" and )
/// and        = not *( "and" not )
/// not        = "not" not / comparison
/// comparison = additive [ ( "eq" / "ne" / "gt" / "ge" / "lt" / "le" ) additive / "in" "(" list ")" ]
/// additive   = multiplicative *( ( "add" / "sub" ) multiplicative )
/// multiplicative = unary *( ( "mul" / "div" / "divby" / "mod" ) unary )
/// unary      = "-" unary / primary
/// primary    = "(" or ")" / call / literal / member
/// call       = NAME "(" [ or *( "," or ) ] ")"   ; see ``ODataFunction``
/// literal    = string / number / "true" / "false" / "null" / date / time / datetimeoffset / guid
///            / "datetimeoffset'" … "'" / "datetime'" … "'" / "guid'" … "'"
///            / "cast(" literal "," ( "Edm.DateTimeOffset" / "Edm.Date" / "Edm.TimeOfDay" ) ")"
/// member     = identifier
/// ```
/// Anything else is an ``ODataFilterError`` with the byte offset where it went wrong. Chains of
/// `and` and `or` are kept flat (one node for `a or b or c …`), so that a filter of hundreds of
/// terms is as shallow as one of two.
indirect enum ODataFilter: Sendable, Equatable {
    case member(String, at: Int)
    case literal(ODataLiteral, at: Int)
    /// `a and b and …`: two terms or more.
    case and([ODataFilter])
    /// `a or b or …`: two terms or more.
    case or([ODataFilter])
    case not(ODataFilter, at: Int)
    /// `-x`.
    case negate(ODataFilter, at: Int)
    case compare(ODataFilter, Comparison, ODataFilter, at: Int)
    case arithmetic(ODataFilter, Arithmetic, ODataFilter, at: Int)
    case call(ODataFunction, [ODataFilter], at: Int)
    /// `x in (a, b, …)`.
    case isIn(ODataFilter, [ODataFilter], at: Int)

    enum Comparison: String, Sendable, Equatable, CaseIterable {
        case eq, ne, gt, ge, lt, le
    }

    enum Arithmetic: String, Sendable, Equatable {
        case add, sub, mul, div, mod
    }

    /// Parses `text`.
    static func parse(_ text: String) throws(ODataFilterError) -> ODataFilter {
        var parser = ODataFilterParser(text)
        let filter = try parser.expression(depth: 0)
        try parser.end()
        return filter
    }

    /// Where the expression starts in the filter's text.
    var offset: Int {
        switch self {
        case .member(_, let at), .literal(_, let at), .not(_, let at), .negate(_, let at), .call(_, _, let at):
            at
        case .compare(let left, _, _, _), .arithmetic(let left, _, _, _), .isIn(let left, _, _): left.offset
        case .and(let terms), .or(let terms): terms.first?.offset ?? 0
        }
    }

    /// Whether the expression is a condition (true or false) rather than a value.
    var isCondition: Bool {
        switch self {
        case .and, .or, .not, .compare, .isIn: true
        case .call(let function, _, _): function.isCondition
        case .member, .literal, .negate, .arithmetic: false
        }
    }
}

/// A literal value in a filter.
enum ODataLiteral: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    /// A number with a fraction or an `m` suffix, as written (`1000.5`, `2m`).
    case decimal(String)
    /// A number with an exponent or a `d`/`f` suffix.
    case double(Double)
    case bool(Bool)
    case null
    /// An instant: microseconds since 1970-01-01T00:00:00Z.
    case dateTimeOffset(microseconds: Int64)
    /// A calendar date, `yyyy-MM-dd`.
    case date(String)
    /// A time of day, `HH:mm:ss` with its fraction (if any) without trailing zeros.
    case timeOfDay(String)
    /// A GUID, lowercase.
    case guid(String)
}

/// A function a filter may call.
enum ODataFunction: String, Sendable, Equatable, CaseIterable {
    case contains, startswith, endswith
    /// v1/v2's `substringof(needle, haystack)`: `contains(haystack, needle)`.
    case substringof
    case length, indexof, substring, tolower, toupper, trim, concat
    case round, floor, ceiling
    case year, month, day, hour, minute, second
    case date, time, now

    /// The numbers of arguments it takes.
    var arities: ClosedRange<Int> {
        switch self {
        case .now: 0...0
        case .contains, .startswith, .endswith, .substringof, .indexof, .concat: 2...2
        case .substring: 2...3
        default: 1...1
        }
    }

    var isCondition: Bool { [.contains, .startswith, .endswith, .substringof].contains(self) }
}

/// A `$filter` that cannot be parsed or run: what and where.
struct ODataFilterError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    /// The byte offset in the filter text where the problem is.
    var offset: Int
    var description: String { "$filter: \(message) at offset \(offset)" }
}

struct ODataFilterParser {
    private let bytes: [UInt8]
    private var i = 0
    /// Deeper nesting (parentheses, `not`, `-`, calls, and each arithmetic operator) is refused,
    /// so that a hostile filter can exhaust neither this parser's stack nor the database's.
    static let maxDepth = 32

    init(_ text: String) { bytes = Array(text.utf8) }

    private func fail(_ message: String, at offset: Int? = nil) -> ODataFilterError {
        ODataFilterError(message: message, offset: offset ?? i)
    }

    private func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }

    private mutating func skipSpaces() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 { i += 1 }
    }

    mutating func end() throws(ODataFilterError) {
        skipSpaces()
        guard i == bytes.count else { throw unexpected() }
    }

    private func unexpected() -> ODataFilterError {
        guard i < bytes.count else { return fail("the filter ends before a value") }
        let word = peekWord() ?? text(i..<min(bytes.count, i + 1))
        switch word {
        case "+", "-", "*", "/", "%", "=", "<", ">", "!", "&", "|":
            return fail("'\(word)' is not an OData operator (use add, sub, mul, div, mod, eq, ne, gt, ge, lt, le)")
        default:
            return fail("unexpected '\(text(i..<min(bytes.count, i + 16)))'")
        }
    }

    private static func isIdentifierStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
    }
    private static func isIdentifierByte(_ b: UInt8) -> Bool {
        isIdentifierStart(b) || isDigit(b) || b == 0x2E
    }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    private static func isHex(_ b: UInt8) -> Bool {
        isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66)
    }

    /// The identifier at the cursor, without moving.
    private func peekWord() -> String? {
        guard i < bytes.count, Self.isIdentifierStart(bytes[i]) else { return nil }
        var j = i
        while j < bytes.count, Self.isIdentifierByte(bytes[j]) { j += 1 }
        return text(i..<j)
    }

    /// Takes `word` when it stands whole at the cursor (followed by a space, a parenthesis, a
    /// quote or the end).
    private mutating func takeWord(_ word: String) -> Bool {
        skipSpaces()
        guard let w = peekWord(), w == word else { return false }
        let end = i + w.utf8.count
        if end < bytes.count, ![0x20, 0x09, 0x28, 0x29, 0x27].contains(bytes[end]) { return false }
        i = end
        return true
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(ODataFilterError) {
        skipSpaces()
        guard i < bytes.count, bytes[i] == byte else {
            guard i < bytes.count else { throw fail("expected \(what)") }
            if Array("+-*/%=<>!&|".utf8).contains(bytes[i]) { throw unexpected() }
            throw fail("expected \(what), found '\(text(i..<i + 1))'")
        }
        i += 1
    }

    private func deeper(_ depth: Int) throws(ODataFilterError) -> Int {
        guard depth < Self.maxDepth else { throw fail("the filter nests deeper than \(Self.maxDepth)") }
        return depth + 1
    }

    mutating func expression(depth: Int) throws(ODataFilterError) -> ODataFilter {
        let depth = try deeper(depth)
        var terms = [try conjunction(depth: depth)]
        while takeWord("or") { terms.append(try conjunction(depth: depth)) }
        return terms.count == 1 ? terms[0] : .or(terms.flatMap { if case .or(let t) = $0 { t } else { [$0] } })
    }

    private mutating func conjunction(depth: Int) throws(ODataFilterError) -> ODataFilter {
        var terms = [try negation(depth: depth)]
        while takeWord("and") { terms.append(try negation(depth: depth)) }
        return terms.count == 1 ? terms[0] : .and(terms.flatMap { if case .and(let t) = $0 { t } else { [$0] } })
    }

    private mutating func negation(depth: Int) throws(ODataFilterError) -> ODataFilter {
        skipSpaces()
        let start = i
        if takeWord("not") { return .not(try negation(depth: try deeper(depth)), at: start) }
        return try comparison(depth: depth)
    }

    private mutating func comparison(depth: Int) throws(ODataFilterError) -> ODataFilter {
        let left = try additive(depth: depth)
        skipSpaces()
        let at = i
        for op in ODataFilter.Comparison.allCases where takeWord(op.rawValue) {
            let right = try additive(depth: depth)
            // A condition compares only with true or false (`contains(a,'b') eq true`).
            if left.isCondition || right.isCondition {
                let other = left.isCondition ? right : left
                guard case .literal(.bool, _) = other, op == .eq || op == .ne else {
                    throw fail("'\(op.rawValue)' compares a condition, which only compares with true or false", at: at)
                }
            }
            return .compare(left, op, right, at: at)
        }
        if takeWord("in") {
            try expect(0x28, "'(' after in")
            var list: [ODataFilter] = []
            repeat { list.append(try additive(depth: depth)) } while try comma()
            try expect(0x29, "')' to close the list of in")
            return .isIn(left, list, at: at)
        }
        return left
    }

    /// Takes a `,` if one follows.
    private mutating func comma() throws(ODataFilterError) -> Bool {
        skipSpaces()
        guard i < bytes.count, bytes[i] == 0x2C else { return false }
        i += 1
        return true
    }

    private mutating func additive(depth: Int) throws(ODataFilterError) -> ODataFilter {
        var left = try multiplicative(depth: depth)
        var depth = depth
        while true {
            skipSpaces()
            let at = i
            let op: ODataFilter.Arithmetic
            if takeWord("add") { op = .add } else if takeWord("sub") { op = .sub } else { return left }
            depth = try deeper(depth)
            left = .arithmetic(left, op, try multiplicative(depth: depth), at: at)
        }
    }

    private mutating func multiplicative(depth: Int) throws(ODataFilterError) -> ODataFilter {
        var left = try unary(depth: depth)
        var depth = depth
        while true {
            skipSpaces()
            let at = i
            let op: ODataFilter.Arithmetic
            if takeWord("mul") {
                op = .mul
            } else if takeWord("div") || takeWord("divby") {
                op = .div
            } else if takeWord("mod") {
                op = .mod
            } else {
                return left
            }
            depth = try deeper(depth)
            left = .arithmetic(left, op, try unary(depth: depth), at: at)
        }
    }

    private mutating func unary(depth: Int) throws(ODataFilterError) -> ODataFilter {
        skipSpaces()
        let at = i
        // `-` before a digit is a number's sign; before anything else, a negation.
        if i < bytes.count, bytes[i] == 0x2D, !(i + 1 < bytes.count && Self.isDigit(bytes[i + 1])) {
            i += 1
            return .negate(try unary(depth: try deeper(depth)), at: at)
        }
        return try primary(depth: depth)
    }

    private mutating func primary(depth: Int) throws(ODataFilterError) -> ODataFilter {
        skipSpaces()
        guard i < bytes.count else { throw fail("the filter ends before a value") }
        let start = i
        let b = bytes[i]
        if b == 0x28 {
            i += 1
            let inner = try expression(depth: depth)
            try expect(0x29, "')'")
            return inner
        }
        if b == 0x27 { return .literal(.string(try quoted()), at: start) }
        if let literal = try bareLiteral() { return .literal(literal, at: start) }
        if b == 0x2D || Self.isDigit(b) { return .literal(try number(), at: start) }
        guard let word = peekWord() else { throw unexpected() }
        if Self.keywords.contains(word) { throw fail("'\(word)' stands in place of a value") }
        i += word.utf8.count
        switch word {
        case "true": return .literal(.bool(true), at: start)
        case "false": return .literal(.bool(false), at: start)
        case "null": return .literal(.null, at: start)
        case "datetimeoffset", "datetime", "guid", "date", "time", "timeofday":
            if i < bytes.count, bytes[i] == 0x27 {
                let value = try quoted()
                return .literal(try typed(value, as: word, at: start + word.utf8.count + 1), at: start)
            }
        case "cast":
            return .literal(try cast(depth: depth), at: start)
        default:
            break
        }
        skipSpaces()
        if i < bytes.count, bytes[i] == 0x28 {
            guard let function = ODataFunction(rawValue: word.lowercased()) else {
                throw fail("the function '\(word)' is not supported", at: start)
            }
            i += 1
            var arguments: [ODataFilter] = []
            skipSpaces()
            if i < bytes.count, bytes[i] == 0x29 {
                i += 1
            } else {
                repeat { arguments.append(try expression(depth: try deeper(depth))) } while try comma()
                try expect(0x29, "')' to close \(word)(")
            }
            guard function.arities.contains(arguments.count) else {
                let count =
                    function.arities.count == 1
                    ? "\(function.arities.lowerBound)"
                    : "\(function.arities.lowerBound) or \(function.arities.upperBound)"
                throw fail(
                    "\(word) takes \(count) argument\(count == "1" ? "" : "s"), not \(arguments.count)", at: start)
            }
            if function == .substringof { return .call(.contains, [arguments[1], arguments[0]], at: start) }
            return .call(function, arguments, at: start)
        }
        guard !word.contains(".") else { throw fail("'\(word)' is not a field name", at: start) }
        return .member(word, at: start)
    }

    /// The operators' words, which cannot name a field.
    static let keywords: Set<String> = [
        "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "add", "sub", "mul", "div", "divby", "mod", "in",
    ]

    /// `cast(LITERAL, Edm.TYPE)`, the cursor after `cast`.
    private mutating func cast(depth: Int) throws(ODataFilterError) -> ODataLiteral {
        try expect(0x28, "'(' after cast")
        skipSpaces()
        let valueStart = i
        let value: String
        if i < bytes.count, bytes[i] == 0x27 {
            value = try quoted()
        } else {
            while i < bytes.count, bytes[i] != 0x2C, bytes[i] != 0x29, bytes[i] != 0x20 { i += 1 }
            value = text(valueStart..<i)
        }
        try expect(0x2C, "',' in cast")
        skipSpaces()
        let typeStart = i
        guard let type = peekWord() else { throw fail("cast needs an Edm type") }
        i += type.utf8.count
        try expect(0x29, "')' to close cast(")
        switch type {
        case "Edm.DateTimeOffset": return try typed(value, as: "datetimeoffset", at: valueStart)
        case "Edm.Date": return try typed(value, as: "date", at: valueStart)
        case "Edm.TimeOfDay": return try typed(value, as: "timeofday", at: valueStart)
        case "Edm.Guid": return try typed(value, as: "guid", at: valueStart)
        case "Edm.String": return .string(value)
        default:
            throw fail("cast(…,\(type)) is not supported (Edm.DateTimeOffset, Edm.Date, Edm.TimeOfDay)", at: typeStart)
        }
    }

    /// `value` read as a literal of `type`.
    private func typed(_ value: String, as type: String, at offset: Int) throws(ODataFilterError) -> ODataLiteral {
        let bytes = Array(value.utf8)
        switch type {
        case "datetimeoffset", "datetime":
            if Self.dateLength(bytes, 0) == bytes.count {
                guard Self.validDate(bytes) else { throw fail("'\(value)' is not a date", at: offset) }
                return .dateTimeOffset(microseconds: try instant(value + "T00:00:00Z", offset))
            }
            return .dateTimeOffset(microseconds: try instant(value, offset))
        case "date":
            guard Self.dateLength(bytes, 0) == bytes.count, Self.validDate(bytes) else {
                throw fail("'\(value)' is not a date (yyyy-MM-dd)", at: offset)
            }
            return .date(value)
        case "time", "timeofday":
            guard let time = Self.timeOfDay(bytes, 0), time.length == bytes.count else {
                throw fail("'\(value)' is not a time of day (HH:mm:ss)", at: offset)
            }
            return .timeOfDay(time.text)
        default:
            guard Self.guidLength(bytes, 0) == bytes.count else { throw fail("'\(value)' is not a GUID", at: offset) }
            return .guid(value.lowercased())
        }
    }

    /// A date, time, date and time or GUID written bare at the cursor (`2000-01-01`,
    /// `07:14:00`, `2000-01-01T00:00:00Z`, `0f8fad5b-d9cb-469f-a165-70867728950e`), if one is.
    private mutating func bareLiteral() throws(ODataFilterError) -> ODataLiteral? {
        let start = i
        if Self.guidLength(bytes, i) == 36, !(i + 36 < bytes.count && Self.isIdentifierByte(bytes[i + 36])) {
            i += 36
            return .guid(text(start..<i).lowercased())
        }
        if Self.dateLength(bytes, i) == 10 {
            var end = i + 10
            if end < bytes.count, bytes[end] == 0x54 || bytes[end] == 0x74 {
                // A date and time: up to the next space, ',' or ')'.
                while end < bytes.count, ![0x20, 0x2C, 0x29, 0x09].contains(bytes[end]) { end += 1 }
                let value = text(i..<end)
                i = end
                return .dateTimeOffset(microseconds: try instant(value, start))
            }
            guard Self.validDate(Array(bytes[i..<end])) else { throw fail("'\(text(i..<end))' is not a date") }
            i = end
            return .date(text(start..<end))
        }
        if let time = Self.timeOfDay(bytes, i) {
            i += time.length
            return .timeOfDay(time.text)
        }
        return nil
    }

    /// The length of `yyyy-MM-dd` at `at`, or 0.
    static func dateLength(_ bytes: [UInt8], _ at: Int) -> Int {
        guard at + 10 <= bytes.count else { return 0 }
        for k in 0..<10 {
            let b = bytes[at + k]
            if k == 4 || k == 7 { guard b == 0x2D else { return 0 } } else { guard isDigit(b) else { return 0 } }
        }
        return 10
    }

    static func validDate(_ bytes: [UInt8]) -> Bool {
        func n(_ r: Range<Int>) -> Int { bytes[r].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        let (year, month, day) = (n(0..<4), n(5..<7), n(8..<10))
        guard (1...12).contains(month), day >= 1 else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return day <= days
    }

    /// `HH:mm[:ss[.f…]]` at `at`: its length, and its text as `HH:mm:ss[.f…]` without trailing
    /// zeros in the fraction; nil when there is none, or when it is not a time (`25:00`).
    static func timeOfDay(_ bytes: [UInt8], _ at: Int) -> (length: Int, text: String)? {
        func digits(_ k: Int) -> Int? {
            guard k + 2 <= bytes.count, isDigit(bytes[k]), isDigit(bytes[k + 1]) else { return nil }
            return Int(bytes[k] - 0x30) * 10 + Int(bytes[k + 1] - 0x30)
        }
        guard let hour = digits(at), at + 2 < bytes.count, bytes[at + 2] == 0x3A, let minute = digits(at + 3),
            hour < 24, minute < 60
        else { return nil }
        var end = at + 5
        var second = 0
        var fraction = ""
        if end < bytes.count, bytes[end] == 0x3A {
            guard let s = digits(end + 1), s < 60 else { return nil }
            second = s
            end += 3
            if end < bytes.count, bytes[end] == 0x2E {
                var k = end + 1
                while k < bytes.count, isDigit(bytes[k]) { k += 1 }
                guard k > end + 1 else { return nil }
                fraction = String(decoding: bytes[(end + 1)..<k], as: UTF8.self)
                end = k
            }
        }
        if end < bytes.count, isIdentifierByte(bytes[end]) || bytes[end] == 0x3A { return nil }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return (end - at, "\(two(hour)):\(two(minute)):\(two(second))" + (fraction.isEmpty ? "" : "." + fraction))
    }

    /// The length of a GUID (`8-4-4-4-12` hex digits) at `at`, or 0.
    static func guidLength(_ bytes: [UInt8], _ at: Int) -> Int {
        guard at + 36 <= bytes.count else { return 0 }
        for k in 0..<36 {
            let b = bytes[at + k]
            if [8, 13, 18, 23].contains(k) {
                guard b == 0x2D else { return 0 }
            } else {
                guard isHex(b) else { return 0 }
            }
        }
        return 36
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
            // PostgreSQL text cannot hold a NUL: refused alike on every storage.
            guard bytes[i] != 0 else { throw fail("a string cannot hold a NUL character") }
            out.append(bytes[i])
            i += 1
        }
    }

    private mutating func number() throws(ODataFilterError) -> ODataLiteral {
        let start = i
        if bytes[i] == 0x2D { i += 1 }
        var digits = 0
        var fraction = false
        var exponent = false
        while i < bytes.count, Self.isDigit(bytes[i]) {
            i += 1
            digits += 1
        }
        if i < bytes.count, bytes[i] == 0x2E {
            fraction = true
            i += 1
            while i < bytes.count, Self.isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == 0x65 || bytes[i] == 0x45 {
            exponent = true
            i += 1
            if i < bytes.count, bytes[i] == 0x2B || bytes[i] == 0x2D { i += 1 }
            let expStart = i
            while i < bytes.count, Self.isDigit(bytes[i]) { i += 1 }
            guard i > expStart else { throw fail("a number's exponent has no digits", at: start) }
        }
        guard digits > 0 else { throw fail("a number was expected", at: start) }
        let text = self.text(start..<i)
        // OData's type suffixes: 2m (decimal), 1.5d and 1.5f (double), 7L (integer).
        var suffix: UInt8 = 0
        if i < bytes.count, [0x64, 0x44, 0x6D, 0x4D, 0x6C, 0x4C, 0x66, 0x46].contains(bytes[i]) {
            suffix = bytes[i] | 0x20
            i += 1
        }
        if i < bytes.count, Self.isIdentifierByte(bytes[i]) {
            throw fail("'\(self.text(start..<i + 1))…' is not a number", at: start)
        }
        switch suffix {
        case 0x6D:
            guard !exponent, Double(text)?.isFinite == true else { throw fail("\(text) is not a decimal", at: start) }
            return .decimal(text)
        case 0x64, 0x66:
            guard let d = Double(text), d.isFinite else { throw fail("the number \(text) is out of range", at: start) }
            return .double(d)
        default:
            if !fraction, !exponent {
                guard let n = Int64(text) else { throw fail("the number \(text) is out of range", at: start) }
                return .integer(n)
            }
            guard suffix == 0, let d = Double(text), d.isFinite else {
                throw fail("the number \(text) is out of range", at: start)
            }
            return exponent ? .double(d) : .decimal(text)
        }
    }

    private func instant(_ text: String, _ offset: Int) throws(ODataFilterError) -> Int64 {
        var text = text
        let instant = text.withUTF8 { ISO8601.instant(UnsafeRawBufferPointer($0), requiresZone: false) }
        guard let instant else { throw fail("'\(text)' is not a date and time", at: offset) }
        return Int64(instant.seconds) * 1_000_000 + Int64(instant.nanoseconds / 1000)
    }
}
