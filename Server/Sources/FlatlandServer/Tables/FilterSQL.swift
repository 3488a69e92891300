/// A value bound to a statement's placeholder.
enum SQLArgument: Sendable, Equatable {
    case text(String)
    case integer(Int64)
    case real(Double)
    /// A boolean: 0 or 1 in SQLite, a `boolean` in PostgreSQL.
    case bool(Bool)
    case null
}

/// A piece of SQL with its arguments, in order. Every argument stands as `?` in `sql`, whatever
/// the dialect: ``SQLDialect/render(_:)`` numbers them for PostgreSQL. The SQL the translation
/// writes holds no other `?` (no user text is ever spliced in).
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

/// The SQL a filter or an order is written in: how placeholders look, how a JSON field is read,
/// what a boolean is, and how text compares.
///
/// In SQLite every expression is loosely typed and compares by SQLite's rules (JSON fields read
/// with `json_extract`, booleans 0 and 1, text by bytes). In PostgreSQL an expression has one
/// type: a JSON field is a `jsonb` (JSON `null` read as SQL `NULL`), text compares by bytes
/// (`COLLATE "C"`), and two operands of different kinds compare as `jsonb`.
enum SQLDialect: Sendable, Equatable {
    case sqlite, postgres

    /// `fragment`'s SQL with its placeholders as the dialect writes them: `?` (SQLite), or
    /// `$1`, `$2`, … with the argument's type (PostgreSQL), numbered from `first`.
    func render(_ fragment: SQLFragment, first: Int = 1) -> String {
        guard self == .postgres else { return fragment.sql }
        var out = ""
        var n = first
        var arguments = fragment.arguments.makeIterator()
        for character in fragment.sql {
            guard character == "?" else {
                out.append(character)
                continue
            }
            let cast: String
            switch arguments.next() {
            case .text?: cast = "::text"
            case .integer?: cast = "::bigint"
            case .real?: cast = "::float8"
            case .bool?: cast = "::boolean"
            case .null?, nil: cast = ""
            }
            out += "$\(n)\(cast)"
            n += 1
        }
        return out
    }

    /// A bound value.
    func literal(_ argument: SQLArgument) -> SQLFragment { SQLFragment("?", [argument]) }

    /// A JSON field of the row's `data` column, by name (the name bound, never spliced in).
    func jsonField(_ name: String) -> SQLFragment {
        switch self {
        case .sqlite: SQLFragment("json_extract(data, ?)", [.text("$.\"" + name + "\"")])
        case .postgres: SQLFragment("NULLIF(data::jsonb -> ?, 'null'::jsonb)", [.text(name)])
        }
    }

    /// An operand as text (for `tolower`, `startswith`, …).
    func text(_ value: (fragment: SQLFragment, kind: ColumnKind)) -> SQLFragment {
        guard self == .postgres else { return value.fragment }
        switch value.kind {
        case .text: return value.fragment
        case .json: return SQLFragment("(") + value.fragment + SQLFragment(" #>> '{}')")
        case .date, .bool: return SQLFragment("(") + value.fragment + SQLFragment(")::text")
        }
    }

    /// An operand as a JSON value (PostgreSQL: `jsonb`).
    func json(_ value: (fragment: SQLFragment, kind: ColumnKind)) -> SQLFragment {
        guard self == .postgres, value.kind != .json else { return value.fragment }
        return SQLFragment("to_jsonb(") + value.fragment + SQLFragment(")")
    }

    /// A condition that is true where `value` is boolean true.
    func truth(_ value: (fragment: SQLFragment, kind: ColumnKind)) -> SQLFragment {
        switch self {
        case .sqlite: SQLFragment("(") + value.fragment + SQLFragment(" = 1)")
        case .postgres: SQLFragment("(") + json(value) + SQLFragment(" = 'true'::jsonb)")
        }
    }

    /// The false a missing condition counts as.
    var falseValue: String { self == .sqlite ? "0" : "false" }

    /// `left symbol right`, with both sides brought to one type where the dialect needs it.
    func comparison(
        _ left: (fragment: SQLFragment, kind: ColumnKind), _ symbol: String,
        _ right: (fragment: SQLFragment, kind: ColumnKind)
    ) -> SQLFragment {
        switch self {
        case .sqlite:
            return SQLFragment("(") + left.fragment + SQLFragment(symbol) + right.fragment + SQLFragment(")")
        case .postgres where left.kind == right.kind:
            let collate = SQLFragment(left.kind == .text ? " COLLATE \"C\"" : "")
            return SQLFragment("(") + left.fragment + collate + SQLFragment(symbol) + right.fragment + SQLFragment(")")
        case .postgres where left.kind == .json && right.kind == .text:
            // As SQLite compares json_extract's value with text: a number or a boolean is below
            // any text, a string compares by bytes (jsonb would use the database's collation).
            return SQLFragment("(ROW(") + Self.rank(left.fragment) + SQLFragment(", (") + left.fragment
                + SQLFragment(" #>> '{}') COLLATE \"C\")") + SQLFragment(symbol) + SQLFragment("ROW(2, ")
                + right.fragment + SQLFragment("))")
        case .postgres where left.kind == .text && right.kind == .json:
            return comparison(right, Self.mirrored(symbol), left)
        case .postgres:
            return SQLFragment("(") + json(left) + SQLFragment(symbol) + json(right) + SQLFragment(")")
        }
    }

    /// Where SQLite puts a JSON value among others: 1 for numbers and booleans, 2 for text
    /// (strings, and objects and arrays, which json_extract gives as their text); NULL for NULL.
    static func rank(_ value: SQLFragment) -> SQLFragment {
        SQLFragment("(CASE jsonb_typeof(") + value
            + SQLFragment(
                ") WHEN 'number' THEN 1 WHEN 'boolean' THEN 1 WHEN 'string' THEN 2 WHEN 'object' THEN 2 WHEN 'array' THEN 2 END)"
            )
    }

    /// The comparison with its sides swapped: `a < b` is `b > a`.
    private static func mirrored(_ symbol: String) -> String {
        switch symbol {
        case " > ": " < "
        case " < ": " > "
        case " >= ": " <= "
        case " <= ": " >= "
        default: symbol
        }
    }

    /// Where `subject` starts with, contains or ends with `pattern` (both text).
    func test(_ test: ODataFilter.StringTest, _ s: SQLFragment, _ p: SQLFragment) -> SQLFragment {
        switch (self, test) {
        case (.sqlite, .startsWith): SQLFragment("(instr(") + s + SQLFragment(", ") + p + SQLFragment(") = 1)")
        case (.sqlite, .contains): SQLFragment("(instr(") + s + SQLFragment(", ") + p + SQLFragment(") > 0)")
        case (.sqlite, .endsWith):
            // substr(s, -n) with n = 0 is the whole string, so an empty suffix is its own case.
            SQLFragment("(length(") + p + SQLFragment(") = 0 OR substr(") + s + SQLFragment(", -length(") + p
                + SQLFragment(")) = ") + p + SQLFragment(")")
        case (.postgres, .startsWith): SQLFragment("(strpos(") + s + SQLFragment(", ") + p + SQLFragment(") = 1)")
        case (.postgres, .contains): SQLFragment("(strpos(") + s + SQLFragment(", ") + p + SQLFragment(") > 0)")
        case (.postgres, .endsWith):
            SQLFragment("(right(") + s + SQLFragment(", length(") + p + SQLFragment(")) = ") + p + SQLFragment(")")
        }
    }

    /// One term of an `ORDER BY`. PostgreSQL puts NULL (a missing field) first when ascending,
    /// as SQLite does, and orders text by bytes; a system column (never NULL) is ordered as its
    /// index is.
    func orderTerm(_ column: (sql: SQLFragment, kind: ColumnKind), descending: Bool) -> SQLFragment {
        let direction = SQLFragment(descending ? " DESC" : " ASC")
        switch (self, column.kind) {
        case (.sqlite, _): return column.sql + direction
        case (.postgres, .json):
            // As SQLite orders json_extract's values: NULL first, then numbers (and booleans),
            // then text (by bytes).
            let x = column.sql
            return Self.rank(x) + direction + SQLFragment(descending ? " NULLS LAST" : " NULLS FIRST")
                + SQLFragment(", (CASE WHEN jsonb_typeof(") + x + SQLFragment(") <> 'number' THEN ") + x
                + SQLFragment(" #>> '{}' END) COLLATE \"C\"") + direction + SQLFragment(", ") + x + direction
        case (.postgres, _):
            // A system column is never NULL: no NULLS clause, which (ASC NULLS FIRST against the
            // index's ASC NULLS LAST) kept PostgreSQL from reading the rows in the index's order
            // and made it sort the whole table for every page.
            return column.sql + SQLFragment(column.kind == .text ? " COLLATE \"C\"" : "") + direction
        }
    }
}

/// How a table's columns are reached in SQL, and how values compare there.
protocol TableColumns: Sendable {
    /// The dialect the columns are written in.
    var dialect: SQLDialect { get }
    /// The SQL expression of a member (a system column, or a field of the row's JSON), with
    /// what kind of value it holds; nil when the member does not exist.
    func column(_ member: String) -> (sql: SQLFragment, kind: ColumnKind)?
}

/// How a request's names reach a table's columns in a dialect: the system properties under the
/// request's names, every other name a field of the row's JSON (``TableWire/column(_:dialect:)``).
struct WireColumns: TableColumns {
    var wire: TableWire
    var dialect: SQLDialect

    func column(_ member: String) -> (sql: SQLFragment, kind: ColumnKind)? {
        wire.column(member, dialect: dialect)
    }
}

/// What a column holds, as far as comparing it is concerned.
enum ColumnKind: Sendable, Equatable {
    /// A date kept as microseconds since the epoch.
    case date
    /// A boolean (0 or 1 in SQLite).
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
            return SQLFragment("(NOT COALESCE(") + (try a.sql(columns))
                + SQLFragment(", \(columns.dialect.falseValue)))")
        case .truth(let operand):
            return columns.dialect.truth(try operand.sql(columns))
        case .compare(let left, let op, let right):
            return try compare(left, op, right, columns)
        case .test(let test, let subject, let pattern):
            let dialect = columns.dialect
            return dialect.test(test, dialect.text(try subject.sql(columns)), dialect.text(try pattern.sql(columns)))
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
        let comparison = columns.dialect.comparison(l, symbol, r)
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
            return (column.sql, column.kind)
        case .string(let s): return (SQLFragment("?", [.text(s)]), .text)
        case .number(let text, let isInteger):
            let number: SQLArgument =
                isInteger ? Int64(text).map(SQLArgument.integer) ?? .real(Double(text) ?? 0) : .real(Double(text) ?? 0)
            return (columns.dialect.json((SQLFragment("?", [number]), .text)), .json)
        case .bool(let b):
            return (SQLFragment("?", [columns.dialect == .sqlite ? .integer(b ? 1 : 0) : .bool(b)]), .bool)
        case .null: return (SQLFragment("NULL"), .json)
        case .date(let micros): return (SQLFragment("?", [.integer(micros)]), .date)
        case .toLower(let inner):
            let value = columns.dialect.text(try inner.sql(columns))
            return (SQLFragment("lower(") + value + SQLFragment(")"), .text)
        case .toUpper(let inner):
            let value = columns.dialect.text(try inner.sql(columns))
            return (SQLFragment("upper(") + value + SQLFragment(")"), .text)
        }
    }
}

extension TableWire {
    /// A member of a row as a column of `dialect`: `id`, the system properties under this
    /// wire's names, every other name a field of the row's JSON.
    func column(_ member: String, dialect: SQLDialect) -> (sql: SQLFragment, kind: ColumnKind)? {
        if member == "id" { return (SQLFragment("id"), .text) }
        switch systemProperty(named: member) {
        case .createdAt: return (SQLFragment("created_at"), .date)
        case .updatedAt: return (SQLFragment("updated_at"), .date)
        // SQLite compares the integer with a JSON number as it is; PostgreSQL as `jsonb`.
        case .version: return (SQLFragment(dialect == .sqlite ? "version" : "to_jsonb(version)"), .json)
        case .deleted: return (SQLFragment("deleted"), .bool)
        case nil: return (dialect.jsonField(member), .json)
        }
    }
}

extension TableRowQuery {
    /// The query's `WHERE` condition (deleted rows, owner, filter) and `ORDER BY` terms (the
    /// asked order, then `id`), over `columns`.
    func sql(_ columns: some TableColumns) throws(TableStorageError) -> (condition: SQLFragment, order: SQLFragment) {
        let dialect = columns.dialect
        var condition = SQLFragment(includeDeleted ? "1 = 1" : (dialect == .sqlite ? "deleted = 0" : "NOT deleted"))
        if let owner {
            condition = condition + SQLFragment(" AND owner = ?", [.text(owner)])
        }
        if let filter {
            do {
                condition = SQLFragment("(") + condition + SQLFragment(") AND ") + (try filter.sql(columns))
            } catch {
                throw TableStorageError(code: .badQuery, message: error.description)
            }
        }
        var order = SQLFragment("")
        for term in orderBy {
            guard let column = columns.column(term.field) else {
                throw TableStorageError(code: .badQuery, message: "$orderby: the table has no field '\(term.field)'")
            }
            order = order + dialect.orderTerm(column, descending: term.descending) + SQLFragment(", ")
        }
        order = order + dialect.orderTerm((SQLFragment("id"), .text), descending: false)
        return (condition, order)
    }
}
