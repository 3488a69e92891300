/// A value bound to a statement's `?`.
enum SQLArgument: Sendable, Equatable {
    case text(String)
    case integer(Int64)
    case real(Double)
    case null
}

/// A piece of SQL with its arguments, in order.
struct SQLFragment: Sendable, Equatable {
    var sql: String
    var arguments: [SQLArgument]

    init(_ sql: String, _ arguments: [SQLArgument] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    static func + (a: SQLFragment, b: SQLFragment) -> SQLFragment {
        SQLFragment(a.sql + b.sql, a.arguments + b.arguments)
    }
}

/// How a table's columns are reached in SQL, and how values compare there.
protocol TableColumns: Sendable {
    /// The SQL expression of a member (a system column, or a field of the row's JSON), with
    /// what kind of value it holds; nil when the member does not exist.
    func column(_ member: String) -> (sql: String, kind: ColumnKind)?
}

/// What a column holds, as far as comparing it is concerned.
enum ColumnKind: Sendable, Equatable {
    /// A date kept as microseconds since the epoch.
    case date
    /// A boolean kept as 0 or 1.
    case bool
    /// Text.
    case text
    /// Any JSON value (a field of a free-form row).
    case json
}

/// A filter that parsed but cannot be run against this table.
struct FilterTranslationError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    var description: String { "$filter: \(message)" }
}

extension ODataFilter {
    /// This filter as an SQL condition over `columns`.
    func sql(_ columns: some TableColumns) throws(FilterTranslationError) -> SQLFragment {
        switch self {
        case .and(let a, let b):
            return SQLFragment("(") + (try a.sql(columns)) + SQLFragment(" AND ") + (try b.sql(columns))
                + SQLFragment(")")
        case .or(let a, let b):
            return SQLFragment("(") + (try a.sql(columns)) + SQLFragment(" OR ") + (try b.sql(columns))
                + SQLFragment(")")
        case .not(let a):
            // SQL's NOT of NULL is NULL (no row); OData's `not` of a missing comparison is true.
            return SQLFragment("(NOT COALESCE(") + (try a.sql(columns)) + SQLFragment(", 0))")
        case .truth(let operand):
            let value = try operand.sql(columns)
            return SQLFragment("(") + value.fragment + SQLFragment(" = 1)")
        case .compare(let left, let op, let right):
            return try compare(left, op, right, columns)
        case .test(let test, let subject, let pattern):
            let s = try subject.sql(columns).fragment
            let p = try pattern.sql(columns).fragment
            switch test {
            case .startsWith:
                return SQLFragment("(instr(") + s + SQLFragment(", ") + p + SQLFragment(") = 1)")
            case .contains:
                return SQLFragment("(instr(") + s + SQLFragment(", ") + p + SQLFragment(") > 0)")
            case .endsWith:
                // substr(s, -n) with n = 0 is the whole string, so an empty suffix is its own case.
                return SQLFragment("(length(") + p + SQLFragment(") = 0 OR substr(") + s + SQLFragment(", -length(")
                    + p + SQLFragment(")) = ") + p + SQLFragment(")")
            }
        }
    }

    private func compare(
        _ left: ODataOperand, _ op: Comparison, _ right: ODataOperand, _ columns: some TableColumns
    ) throws(FilterTranslationError) -> SQLFragment {
        if case .null = right { return try nullTest(left, op, columns) }
        if case .null = left { return try nullTest(right, op, columns) }
        let l = try left.sql(columns)
        let r = try right.sql(columns)
        let symbol: String
        switch op {
        case .eq: symbol = " = "
        case .ne: symbol = " <> "
        case .gt: symbol = " > "
        case .ge: symbol = " >= "
        case .lt: symbol = " < "
        case .le: symbol = " <= "
        }
        // A date column against anything but a date, or a date against text, compares nothing.
        if (l.kind == .date) != (r.kind == .date), l.kind != .json, r.kind != .json {
            throw FilterTranslationError(
                message: "in '\(left.odata) \(op.rawValue) \(right.odata)', a date can only be compared with a date")
        }
        let comparison = SQLFragment("(") + l.fragment + SQLFragment(symbol) + r.fragment + SQLFragment(")")
        // `ne` is true where the field is missing, as a client filtering in memory would find.
        if op == .ne {
            return SQLFragment("(") + l.fragment + SQLFragment(" IS NULL OR ") + r.fragment
                + SQLFragment(" IS NULL OR ") + comparison + SQLFragment(")")
        }
        return comparison
    }

    private func nullTest(_ operand: ODataOperand, _ op: Comparison, _ columns: some TableColumns)
        throws(FilterTranslationError) -> SQLFragment
    {
        let value = try operand.sql(columns).fragment
        switch op {
        case .eq: return SQLFragment("(") + value + SQLFragment(" IS NULL)")
        case .ne: return SQLFragment("(") + value + SQLFragment(" IS NOT NULL)")
        default:
            throw FilterTranslationError(
                message: "in '\(operand.odata) \(op.rawValue) null', null can only be compared with eq or ne")
        }
    }
}

extension ODataOperand {
    /// The operand as OData text, to say where a filter fails.
    var odata: String {
        switch self {
        case .member(let name): name
        case .string(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .number(let text, _): text
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        case .date(let micros): "datetimeoffset'\(TableRow.dateString(micros))'"
        case .toLower(let inner): "tolower(\(inner.odata))"
        case .toUpper(let inner): "toupper(\(inner.odata))"
        }
    }

    func sql(_ columns: some TableColumns) throws(FilterTranslationError) -> (fragment: SQLFragment, kind: ColumnKind) {
        switch self {
        case .member(let name):
            guard let column = columns.column(name) else {
                throw FilterTranslationError(message: "the table has no field '\(name)'")
            }
            return (SQLFragment(column.sql), column.kind)
        case .string(let s): return (SQLFragment("?", [.text(s)]), .text)
        case .number(let text, let isInteger):
            if isInteger, let i = Int64(text) { return (SQLFragment("?", [.integer(i)]), .json) }
            return (SQLFragment("?", [.real(Double(text) ?? 0)]), .json)
        case .bool(let b): return (SQLFragment("?", [.integer(b ? 1 : 0)]), .bool)
        case .null: return (SQLFragment("NULL"), .json)
        case .date(let micros): return (SQLFragment("?", [.integer(micros)]), .date)
        case .toLower(let inner):
            let value = try inner.sql(columns)
            return (SQLFragment("lower(") + value.fragment + SQLFragment(")"), .text)
        case .toUpper(let inner):
            let value = try inner.sql(columns)
            return (SQLFragment("upper(") + value.fragment + SQLFragment(")"), .text)
        }
    }
}
