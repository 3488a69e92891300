@_spi(FlatlandInternal) import Flatland
import Foundation

/// A value of a filter in SQL: its expression and what kind of value it is.
typealias SQLValue = (fragment: SQLFragment, kind: ColumnKind)

/// Writes a parsed ``ODataFilter`` as an SQL condition over a table's columns, in its dialect.
///
/// Every literal is a bound argument; the only text of the filter that reaches the SQL is a
/// field's name, and only as a bound JSON path (``SQLDialect/jsonField(_:)``) or through
/// ``TableColumns/column(_:)``. `and`/`or` chains are written as balanced trees (a chain of n
/// terms nests log₂ n deep), so a filter of hundreds of terms stays far from SQLite's parser
/// and expression-depth limits. An expression the dialect cannot evaluate is an
/// ``ODataFilterError`` naming the operator or function and its offset.
///
/// Semantics (the same on both storages):
/// - `eq null`/`ne null` test for a missing or null field; `ne` is true where either side is
///   missing; `not` of a comparison on a missing field is true.
/// - `add sub mul div mod` on numbers; `div` of two integers is an integer division (as .NET's),
///   otherwise exact; division by zero gives no value (no row), never an error.
/// - `round` rounds half away from zero (OData); `floor`, `ceiling`.
/// - `year … second`, `date()` and `time()` of a system date read it in UTC; of a free-form
///   field they read the parts of the text as written (`yyyy-MM-dd…`, `…THH:mm:ss…`, or a time
///   of day `HH:mm:ss`), that is in the value's own offset, as .NET's `DateTimeOffset` does.
/// - A date and time literal compared with a free-form field compares instants, to the
///   millisecond; a date (`2000-01-01`) or a time of day compared with a free-form field
///   compares the text (`yyyy-MM-dd`, `HH:mm:ss`), as the Datasync clients write them.
/// - Text compares by bytes; `tolower`/`toupper` as the database's `lower`/`upper`.
struct FilterTranslator<Columns: TableColumns> {
    let columns: Columns
    /// The time `now()` stands for: microseconds since the epoch.
    var now: Int64 = Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down))

    private var dialect: SQLDialect { columns.dialect }

    init(columns: Columns) { self.columns = columns }

    private func fail(_ message: String, at offset: Int) -> ODataFilterError {
        ODataFilterError(message: message, offset: offset)
    }

    // MARK: Conditions

    /// `filter` as an SQL condition.
    func condition(_ filter: ODataFilter) throws(ODataFilterError) -> SQLFragment {
        switch filter {
        case .and(let terms): return try balanced(terms[...], " AND ")
        case .or(let terms): return try balanced(terms[...], " OR ")
        case .not(let inner, _): return negation(try condition(inner))
        case .compare(let left, let op, let right, let at):
            if left.isCondition || right.isCondition {
                // `contains(a,'b') eq true`: the parser let only true and false stand beside a condition.
                let (test, other) = left.isCondition ? (left, right) : (right, left)
                guard case .literal(.bool(let b), _) = other else {
                    throw fail("'\(op.rawValue)' compares a condition with something other than true or false", at: at)
                }
                let c = try condition(test)
                return (op == .eq) == b ? c : negation(c)
            }
            return try compare(left, op, right, at: at)
        case .isIn(let subject, let list, let at):
            guard !list.isEmpty else { return SQLFragment("(1 = 0)") }
            let terms = list.map { ODataFilter.compare(subject, .eq, $0, at: at) }
            return try balanced(terms[...], " OR ")
        case .call(let function, let arguments, _) where function.isCondition:
            let subject = dialect.text(try value(arguments[0]))
            let pattern = dialect.text(try value(arguments[1]))
            let test: StringTest =
                switch function {
                case .startswith: .startsWith
                case .endswith: .endsWith
                default: .contains
                }
            return dialect.test(test, subject, pattern)
        case .member, .literal(.bool, _):
            let v = try value(filter)
            guard v.kind == .bool || v.kind == .json else {
                throw fail("a condition was expected, not the value \(filter.odata)", at: filter.offset)
            }
            return dialect.truth(v)
        default:
            throw fail("a condition was expected, not the value \(filter.odata)", at: filter.offset)
        }
    }

    /// `terms` joined by `op` as a balanced tree of parenthesized pairs.
    private func balanced(_ terms: ArraySlice<ODataFilter>, _ op: String) throws(ODataFilterError) -> SQLFragment {
        if terms.count == 1 { return try condition(terms[terms.startIndex]) }
        let middle = terms.startIndex + terms.count / 2
        return SQLFragment("(") + (try balanced(terms[..<middle], op)) + SQLFragment(op)
            + (try balanced(terms[middle...], op)) + SQLFragment(")")
    }

    /// SQL's `NOT` of NULL is NULL (no row); OData's `not` of a comparison with a missing
    /// field is true.
    private func negation(_ c: SQLFragment) -> SQLFragment {
        SQLFragment("(NOT COALESCE(") + c + SQLFragment(", \(dialect.falseValue)))")
    }

    private func compare(_ left: ODataFilter, _ op: ODataFilter.Comparison, _ right: ODataFilter, at: Int)
        throws(ODataFilterError) -> SQLFragment
    {
        if case .literal(.null, _) = right { return try nullTest(left, op, at: at) }
        if case .literal(.null, _) = left { return try nullTest(right, op, at: at) }
        var l = try value(left)
        var r = try value(right)
        let symbol: String
        switch op {
        case .eq: symbol = " = "
        case .ne: symbol = " <> "
        case .gt: symbol = " > "
        case .ge: symbol = " >= "
        case .lt: symbol = " < "
        case .le: symbol = " <= "
        }
        let written = "'\(left.odata) \(op.rawValue) \(right.odata)'"
        // An enumeration: eq and ne by name, the others by declared position.
        for kind in [l.kind, r.kind] {
            guard case .enumeration(let names) = kind else { continue }
            let ordering = op != .eq && op != .ne
            func side(_ v: SQLValue, _ e: ODataFilter) throws(ODataFilterError) -> SQLValue {
                if case .enumeration = v.kind {
                    return ordering ? (dialect.position(v.fragment, names), .number) : (v.fragment, .text)
                }
                guard case .literal(.string(let name), _) = e else {
                    throw fail("in \(written), a field of names compares only with one of its names", at: at)
                }
                guard let position = names.firstIndex(of: name) else {
                    throw fail("in \(written), '\(name)' is not one of \(names.joined(separator: ", "))", at: at)
                }
                return ordering ? (SQLFragment("?", [.integer(Int64(position))]), .number) : v
            }
            l = try side(l, left)
            r = try side(r, right)
            break
        }
        // A system date against a date, a date and time, or a string that is one, as instants.
        if l.kind == .date || r.kind == .date {
            if l.kind != .date { l = try instant(left, l, against: written, at: at) }
            if r.kind != .date { r = try instant(right, r, against: written, at: at) }
        }
        let comparison =
            l.kind == .date && r.kind == .date
            ? SQLFragment("(") + l.fragment + SQLFragment(symbol) + r.fragment + SQLFragment(")")
            : dialect.comparison(l, symbol, r)
        // `ne` is true where a side is missing, as a client filtering in memory would find.
        if op == .ne {
            return SQLFragment("(") + l.fragment + SQLFragment(" IS NULL OR ") + r.fragment
                + SQLFragment(" IS NULL OR ") + comparison + SQLFragment(")")
        }
        return comparison
    }

    /// The other side of a comparison with a system date (microseconds), as microseconds: a
    /// date literal, a string literal that is a date and time, or a field read as an instant
    /// (to the millisecond; the date side is then truncated to the millisecond too).
    private func instant(_ expression: ODataFilter, _ v: SQLValue, against written: String, at: Int)
        throws(ODataFilterError) -> SQLValue
    {
        switch expression {
        case .literal(.date(let text), _):
            return (SQLFragment("?", [.integer(try Self.micros(text + "T00:00:00Z") ?? 0)]), .date)
        case .literal(.timeOfDay, _), .literal(.guid, _):
            throw fail("in \(written), a date can only be compared with a date", at: at)
        case .literal(.string(let text), _):
            guard let micros = try Self.micros(text) else {
                throw fail("in \(written), a date can only be compared with a date", at: at)
            }
            return (SQLFragment("?", [.integer(micros)]), .date)
        default:
            guard v.kind == .json || v.kind == .text else {
                throw fail("in \(written), a date can only be compared with a date", at: at)
            }
            let millis: SQLFragment
            switch dialect {
            case .sqlite:
                let text =
                    v.kind == .json
                    ? SQLFragment("(CASE WHEN typeof(") + v.fragment + SQLFragment(") = 'text' THEN ") + v.fragment
                        + SQLFragment(" END)") : v.fragment
                millis =
                    SQLFragment("CAST(round((julianday(") + text + SQLFragment(") - 2440587.5) * 86400000) AS INTEGER)")
            case .postgres:
                guard let function = columns.instantFunction else {
                    throw fail("in \(written), a date cannot be compared with a free-form field here", at: at)
                }
                millis =
                    SQLFragment("CAST(floor(extract(epoch from \(function)(") + dialect.text(v)
                    + SQLFragment(")) * 1000) AS bigint)")
            }
            return (SQLFragment("(") + millis + SQLFragment(" * 1000)"), .date)
        }
    }

    private static func micros(_ text: String) throws(ODataFilterError) -> Int64? {
        var text = text
        let instant = text.withUTF8 { ISO8601.instant(UnsafeRawBufferPointer($0), requiresZone: false) }
        return instant.map { Int64($0.seconds) * 1_000_000 + Int64($0.nanoseconds / 1000) }
    }

    private func nullTest(_ operand: ODataFilter, _ op: ODataFilter.Comparison, at: Int) throws(ODataFilterError)
        -> SQLFragment
    {
        let v: SQLValue = operand.isCondition ? (try condition(operand), .bool) : try value(operand)
        switch op {
        case .eq: return SQLFragment("(") + v.fragment + SQLFragment(" IS NULL)")
        case .ne: return SQLFragment("(") + v.fragment + SQLFragment(" IS NOT NULL)")
        default:
            throw fail("in '\(operand.odata) \(op.rawValue) null', null can only be compared with eq or ne", at: at)
        }
    }

    // MARK: Values

    /// `expression` as an SQL value.
    func value(_ expression: ODataFilter) throws(ODataFilterError) -> SQLValue {
        switch expression {
        case .member(let name, let at):
            guard let column = columns.column(name) else { throw fail("the table has no field '\(name)'", at: at) }
            return (column.sql, column.kind)
        case .literal(let literal, _):
            return bound(literal)
        case .negate(let inner, let at):
            let v = try number(inner, "-", at: at)
            return (SQLFragment("(- ") + v + SQLFragment(")"), .number)
        case .arithmetic(let left, let op, let right, let at):
            return try arithmetic(left, op, right, at: at)
        case .call(let function, let arguments, let at):
            return try call(function, arguments, at: at)
        case .and, .or, .not, .compare, .isIn:
            // A condition as a value (`(a eq 1) eq true` was handled as a condition).
            let c = try condition(expression)
            return (c, .bool)
        }
    }

    /// A literal as a bound argument.
    private func bound(_ literal: ODataLiteral) -> SQLValue {
        switch literal {
        case .string(let s), .date(let s), .timeOfDay(let s), .guid(let s): return (SQLFragment("?", [.text(s)]), .text)
        case .integer(let n): return (SQLFragment("?", [.integer(n)]), .number)
        case .decimal(let text):
            let digits = text.hasSuffix("m") || text.hasSuffix("M") ? String(text.dropLast()) : text
            switch dialect {
            case .sqlite: return (SQLFragment("?", [.real(Double(digits) ?? 0)]), .number)
            case .postgres: return (SQLFragment("CAST(? AS numeric)", [.text(digits)]), .number)
            }
        case .double(let d):
            switch dialect {
            case .sqlite: return (SQLFragment("?", [.real(d)]), .number)
            // As numeric, with its fraction (so that `div` by it is not an integer division).
            case .postgres: return (SQLFragment("CAST(? AS numeric)", [.text("\(d)")]), .number)
            }
        case .bool(let b): return (SQLFragment("?", [dialect == .sqlite ? .integer(b ? 1 : 0) : .bool(b)]), .bool)
        case .null: return (SQLFragment(dialect == .sqlite ? "NULL" : "NULL::jsonb"), .json)
        case .dateTimeOffset(let micros): return (SQLFragment("?", [.integer(micros)]), .date)
        }
    }

    /// `expression` as a number for `what` (an operator or function), or an error naming it.
    private func number(_ expression: ODataFilter, _ what: String, at: Int) throws(ODataFilterError) -> SQLFragment {
        let v = try value(expression)
        switch (dialect, v.kind) {
        case (_, .number): return v.fragment
        case (.sqlite, .json): return v.fragment
        case (.postgres, .json):
            return dialect.letting(v.fragment) { x in
                SQLFragment("(CASE WHEN jsonb_typeof(") + x + SQLFragment(") = 'number' THEN (") + x
                    + SQLFragment(")::numeric END)")
            }
        default:
            throw fail("\(what) needs a number, not \(expression.odata)", at: at)
        }
    }

    private func arithmetic(_ left: ODataFilter, _ op: ODataFilter.Arithmetic, _ right: ODataFilter, at: Int)
        throws(ODataFilterError) -> SQLValue
    {
        let l = try number(left, op.rawValue, at: at)
        let r = try number(right, op.rawValue, at: at)
        func infix(_ symbol: String) -> SQLValue {
            (SQLFragment("(") + l + SQLFragment(symbol) + r + SQLFragment(")"), .number)
        }
        switch (op, dialect) {
        case (.add, _): return infix(" + ")
        case (.sub, _): return infix(" - ")
        case (.mul, _): return infix(" * ")
        // SQLite: an integer division of two integers, NULL for a division by zero.
        case (.div, .sqlite): return infix(" / ")
        case (.mod, .sqlite): return (SQLFragment("mod(") + l + SQLFragment(", ") + r + SQLFragment(")"), .number)
        case (.div, .postgres):
            // Two integers (scale 0): an integer division, toward zero, as .NET's; else exact.
            return (
                SQLFragment(
                    "(SELECT CASE WHEN scale(l) = 0 AND scale(r) = 0 THEN div(l, r) ELSE l / r END FROM (SELECT (")
                    + l + SQLFragment(")::numeric AS l, NULLIF((") + r + SQLFragment(")::numeric, 0) AS r) AS q)"),
                .number
            )
        case (.mod, .postgres):
            return (
                SQLFragment("mod((") + l + SQLFragment(")::numeric, NULLIF((") + r + SQLFragment(")::numeric, 0))"),
                .number
            )
        }
    }

    private func call(_ function: ODataFunction, _ arguments: [ODataFilter], at: Int) throws(ODataFilterError)
        -> SQLValue
    {
        let name = function.rawValue
        func text(_ k: Int) throws(ODataFilterError) -> SQLFragment { dialect.text(try value(arguments[k])) }
        func wrap(_ f: String, _ x: SQLFragment, _ kind: ColumnKind) -> SQLValue {
            (SQLFragment(f + "(") + x + SQLFragment(")"), kind)
        }
        switch function {
        case .tolower: return wrap("lower", try text(0), .text)
        case .toupper: return wrap("upper", try text(0), .text)
        case .trim: return wrap("trim", try text(0), .text)
        case .length: return wrap("length", try text(0), .number)
        case .concat:
            return (
                SQLFragment("(COALESCE(") + (try text(0)) + SQLFragment(", '') || COALESCE(") + (try text(1))
                    + SQLFragment(", ''))"), .text
            )
        case .indexof:
            let f = dialect == .sqlite ? "instr(" : "strpos("
            return (
                SQLFragment("(" + f) + (try text(0)) + SQLFragment(", ") + (try text(1)) + SQLFragment(") - 1)"),
                .number
            )
        case .substring:
            let s = try text(0)
            let start = try number(arguments[1], name, at: at)
            switch dialect {
            case .sqlite:
                var sql = SQLFragment("substr(") + s + SQLFragment(", max(") + start + SQLFragment(", 0) + 1")
                if arguments.count == 3 {
                    sql = sql + SQLFragment(", max(") + (try number(arguments[2], name, at: at)) + SQLFragment(", 0)")
                }
                return (sql + SQLFragment(")"), .text)
            case .postgres:
                var sql =
                    SQLFragment("substr(") + s + SQLFragment(", CAST(GREATEST(") + start
                    + SQLFragment(", 0) + 1 AS integer)")
                if arguments.count == 3 {
                    sql =
                        sql + SQLFragment(", CAST(GREATEST(") + (try number(arguments[2], name, at: at))
                        + SQLFragment(", 0) AS integer)")
                }
                return (sql + SQLFragment(")"), .text)
            }
        case .round, .floor, .ceiling:
            let x = try number(arguments[0], name, at: at)
            let f = function == .ceiling ? "ceil" : name
            // PostgreSQL rounds a float8 half to even: as numeric, half away from zero.
            if dialect == .postgres { return (SQLFragment(f + "((") + x + SQLFragment(")::numeric)"), .number) }
            return (SQLFragment(f + "(") + x + SQLFragment(")"), .number)
        case .year, .month, .day, .hour, .minute, .second, .date, .time:
            return try datePart(function, arguments[0], at: at)
        case .now:
            return (SQLFragment("?", [.integer(now)]), .date)
        case .contains, .startswith, .endswith, .substringof:
            throw fail("\(name) is a condition, not a value", at: at)
        }
    }

    /// A part of a date: of a system date (microseconds) in UTC, of text as written.
    private func datePart(_ function: ODataFunction, _ argument: ODataFilter, at: Int) throws(ODataFilterError)
        -> SQLValue
    {
        // A declared field that is no date, time or instant has no parts.
        if case .member(let name, _) = argument, let type = columns.declaredType(name),
            ![.date, .time, .datetime, .json].contains(type)
        {
            throw fail("\(function.rawValue) needs a date, a time or a date and time, not the field '\(name)'", at: at)
        }
        let v = try value(argument)
        let isText = function == .date || function == .time
        switch v.kind {
        case .date:
            let d = v.fragment
            switch dialect {
            case .sqlite:
                let format: String =
                    switch function {
                    case .year: "%Y"
                    case .month: "%m"
                    case .day: "%d"
                    case .hour: "%H"
                    case .minute: "%M"
                    case .second: "%S"
                    case .date: "%Y-%m-%d"
                    default: "%H:%M:%S"
                    }
                let text = SQLFragment("strftime('\(format)', (") + d + SQLFragment(") / 1000000, 'unixepoch')")
                return isText ? (text, .text) : (SQLFragment("CAST(") + text + SQLFragment(" AS INTEGER)"), .number)
            case .postgres:
                let timestamp = SQLFragment("(to_timestamp((") + d + SQLFragment(") / 1000000.0) AT TIME ZONE 'UTC')")
                switch function {
                case .date: return (SQLFragment("to_char(") + timestamp + SQLFragment(", 'YYYY-MM-DD')"), .text)
                case .time: return (SQLFragment("to_char(") + timestamp + SQLFragment(", 'HH24:MI:SS')"), .text)
                default:
                    return (
                        SQLFragment("CAST(floor(extract(\(function.rawValue) from ") + timestamp
                            + SQLFragment(")) AS integer)"), .number
                    )
                }
            }
        case .text, .json:
            let t = dialect.text(v)
            switch dialect {
            case .sqlite:
                let date = "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'"
                let dateTime = "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][Tt ][0-9][0-9]:[0-9][0-9]*'"
                let time = "'[0-9][0-9]:[0-9][0-9]*'"
                let part: SQLFragment = dialect.letting(t) { x in
                    func when(_ pattern: String, _ from: Int, _ length: Int) -> SQLFragment {
                        SQLFragment(" WHEN ") + x + SQLFragment(" GLOB \(pattern) THEN substr(") + x
                            + SQLFragment(", \(from), \(length))")
                    }
                    var cases: SQLFragment
                    switch function {
                    case .year: cases = when(date, 1, 4)
                    case .month: cases = when(date, 6, 2)
                    case .day: cases = when(date, 9, 2)
                    case .date: cases = when(date, 1, 10)
                    case .hour: cases = when(dateTime, 12, 2) + when(time, 1, 2)
                    case .minute: cases = when(dateTime, 15, 2) + when(time, 4, 2)
                    case .second: cases = when(dateTime, 18, 2) + when(time, 7, 2)
                    default: cases = when(dateTime, 12, 8) + when(time, 1, 8)
                    }
                    return SQLFragment("(CASE") + cases + SQLFragment(" END)")
                }
                return isText ? (part, .text) : (SQLFragment("CAST(") + part + SQLFragment(" AS INTEGER)"), .number)
            case .postgres:
                let date = #"^\d{4}-\d{2}-\d{2}"#
                let pattern: (String, String?)
                switch function {
                case .year: pattern = (#"^(\d{4})-\d{2}-\d{2}"#, nil)
                case .month: pattern = (#"^\d{4}-(\d{2})-\d{2}"#, nil)
                case .day: pattern = (#"^\d{4}-\d{2}-(\d{2})"#, nil)
                case .date: pattern = (#"^(\d{4}-\d{2}-\d{2})"#, nil)
                case .hour: pattern = (date + #"[Tt ](\d{2}):\d{2}"#, #"^(\d{2}):\d{2}"#)
                case .minute: pattern = (date + #"[Tt ]\d{2}:(\d{2})"#, #"^\d{2}:(\d{2})"#)
                case .second: pattern = (date + #"[Tt ]\d{2}:\d{2}:(\d{2})"#, #"^\d{2}:\d{2}:(\d{2})"#)
                default: pattern = (date + #"[Tt ](\d{2}:\d{2}:\d{2})"#, #"^(\d{2}:\d{2}:\d{2})"#)
                }
                let part: SQLFragment = dialect.letting(t) { x in
                    let first = SQLFragment("substring(") + x + SQLFragment(" from '\(pattern.0)')")
                    guard let second = pattern.1 else { return first }
                    return SQLFragment("COALESCE(") + first + SQLFragment(", substring(") + x
                        + SQLFragment(" from '\(second)'))")
                }
                return isText ? (part, .text) : (SQLFragment("CAST(") + part + SQLFragment(" AS integer)"), .number)
            }
        default:
            throw fail("\(function.rawValue) needs a date, a time or a date and time, not \(argument.odata)", at: at)
        }
    }
}

extension SQLDialect {
    /// `body` of `value`, where `body` may use its argument more than once: `value` itself when
    /// it is short (a column, a field, a bound literal), else bound once in a subquery, so that
    /// nested calls cannot make the SQL grow exponentially.
    func letting(_ value: SQLFragment, _ body: (SQLFragment) -> SQLFragment) -> SQLFragment {
        if value.sql.utf8.count <= 96, !value.sql.contains("SELECT") { return body(value) }
        return SQLFragment("(SELECT ") + body(SQLFragment("v")) + SQLFragment(" FROM (SELECT ") + value
            + SQLFragment(" AS v) AS let_v)")
    }
}

extension ODataFilter {
    /// The expression as OData text, to say where a filter fails.
    var odata: String {
        switch self {
        case .member(let name, _): return name
        case .literal(let literal, _): return literal.odata
        case .and(let terms): return terms.map(\.odata).joined(separator: " and ")
        case .or(let terms): return "(" + terms.map(\.odata).joined(separator: " or ") + ")"
        case .not(let inner, _): return "not " + inner.odata
        case .negate(let inner, _): return "-" + inner.odata
        case .compare(let l, let op, let r, _): return "\(l.odata) \(op.rawValue) \(r.odata)"
        case .arithmetic(let l, let op, let r, _): return "(\(l.odata) \(op.rawValue) \(r.odata))"
        case .call(let f, let arguments, _):
            return f.rawValue + "(" + arguments.map(\.odata).joined(separator: ",") + ")"
        case .isIn(let subject, let list, _):
            return subject.odata + " in (" + list.map(\.odata).joined(separator: ",") + ")"
        }
    }
}

extension ODataLiteral {
    var odata: String {
        switch self {
        case .string(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .integer(let n): "\(n)"
        case .decimal(let text): text
        case .double(let d): "\(d)"
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        case .dateTimeOffset(let micros): TableRow.dateString(micros)
        case .date(let text), .timeOfDay(let text), .guid(let text): text
        }
    }
}
