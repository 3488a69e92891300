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
    /// `name` is a field name (``TableColumnName/isValid(_:)``).
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
        case .text, .enumeration: return value.fragment
        case .json: return SQLFragment("(") + value.fragment + SQLFragment(" #>> '{}')")
        case .date, .bool, .number: return SQLFragment("(") + value.fragment + SQLFragment(")::text")
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
    func test(_ test: StringTest, _ s: SQLFragment, _ p: SQLFragment) -> SQLFragment {
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
    /// A declared field's column (`nullable`) puts NULL first when ascending in PostgreSQL too;
    /// an enumeration orders by its names' declared positions.
    func orderTerm(_ column: (sql: SQLFragment, kind: ColumnKind), descending: Bool, nullable: Bool = false)
        -> SQLFragment
    {
        let direction = SQLFragment(descending ? " DESC" : " ASC")
        if case .enumeration(let names) = column.kind {
            return orderTerm((position(column.sql, names), .number), descending: descending, nullable: nullable)
        }
        switch (self, column.kind) {
        case (.sqlite, _): return column.sql + direction
        case (.postgres, _) where nullable && column.kind != .json:
            return column.sql + direction + SQLFragment(descending ? " NULLS LAST" : " NULLS FIRST")
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

/// A test of text against text.
enum StringTest: Sendable, Equatable {
    case startsWith, endsWith, contains
}

/// How a table's columns are reached in SQL, and how values compare there.
protocol TableColumns: Sendable {
    /// The dialect the columns are written in.
    var dialect: SQLDialect { get }
    /// The SQL expression of a member (a system column, or a field of the row's JSON), with
    /// what kind of value it holds; nil when the member does not exist.
    func column(_ member: String) -> (sql: SQLFragment, kind: ColumnKind)?
    /// PostgreSQL: the function that reads text as a `timestamptz` (NULL when it is not one),
    /// for comparing a date with a free-form field; nil where there is none.
    var instantFunction: String? { get }
    /// Whether `member` is a declared field that may be null (its column may hold NULL).
    func isNullableField(_ member: String) -> Bool
    /// The type `member` is declared with; nil for a free-form field or a system property.
    func declaredType(_ member: String) -> TableSchema.FieldType?
}

extension TableColumns {
    var instantFunction: String? { nil }
    func isNullableField(_ member: String) -> Bool { false }
    func declaredType(_ member: String) -> TableSchema.FieldType? { nil }
}

/// How a request's names reach a table's columns in a dialect: the system properties under the
/// request's names, every other name a field of the row's JSON (``TableWire/column(_:dialect:)``).
struct WireColumns: TableColumns {
    var wire: TableWire
    var dialect: SQLDialect
    /// PostgreSQL: the schema's function that reads text as an instant (``PostgresTableStorage``
    /// creates it).
    var instantFunction: String? = nil
    /// The fields the table declares; nil: free-form rows.
    var schema: TableSchema? = nil

    func column(_ member: String) -> (sql: SQLFragment, kind: ColumnKind)? { declared(member) }

    func isNullableField(_ member: String) -> Bool { schema?.field(member)?.nullable ?? false }

    func declaredType(_ member: String) -> TableSchema.FieldType? { schema?.field(member)?.type }
}

/// What a column holds, as far as comparing it is concerned.
enum ColumnKind: Sendable, Equatable {
    /// A date kept as microseconds since the epoch.
    case date
    /// A boolean (0 or 1 in SQLite).
    case bool
    /// Text.
    case text
    /// A number (PostgreSQL: `bigint`, `numeric` or `float8`).
    case number
    /// Any JSON value (a field of a free-form row; PostgreSQL: `jsonb`).
    case json
    /// Text that is one of these names, ordered and compared by their positions.
    case enumeration([String])
}

/// The names a table's fields may have: a letter or `_`, then letters, digits and `_` (up to
/// 128 bytes). Any other name (`text"`, `a b`) is refused before it reaches SQL.
enum TableColumnName {
    static func isValid(_ name: Substring) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 128 else { return false }
        func letter(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F }
        return letter(first) && name.utf8.allSatisfy { letter($0) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    static func isValid(_ name: String) -> Bool { isValid(name[...]) }
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
    /// The most arguments a filter may bind, and the longest SQL it may come to: below every
    /// database's own limits, so that a long filter is a clear 400 rather than a database error.
    static let maxArguments = 30_000
    static let maxSQLBytes = 4 << 20

    /// The query's `WHERE` condition (deleted rows, owner, filter) and `ORDER BY` terms (the
    /// asked order, then `id`, so that pages never overlap), over `columns`.
    func sql(_ columns: some TableColumns) throws(TableStorageError) -> (condition: SQLFragment, order: SQLFragment) {
        let dialect = columns.dialect
        var condition = SQLFragment(includeDeleted ? "1 = 1" : (dialect == .sqlite ? "deleted = 0" : "NOT deleted"))
        if let owner {
            condition = condition + SQLFragment(" AND owner = ?", [.text(owner)])
        }
        if let filter {
            let translated: SQLFragment
            do {
                translated = try FilterTranslator(columns: columns).condition(filter)
            } catch {
                throw TableStorageError(code: .badQuery, message: error.description)
            }
            guard translated.arguments.count <= Self.maxArguments, translated.sql.utf8.count <= Self.maxSQLBytes else {
                throw TableStorageError(code: .badQuery, message: "$filter: the filter is too large to run")
            }
            condition = SQLFragment("(") + condition + SQLFragment(") AND ") + translated
        }
        var order = SQLFragment("")
        for term in orderBy {
            // `id` is unique: the terms after it change nothing.
            if term.field == "id" {
                return (condition, order + dialect.orderTerm((SQLFragment("id"), .text), descending: term.descending))
            }
            guard TableColumnName.isValid(term.field) else {
                throw TableStorageError(code: .badQuery, message: "$orderby: '\(term.field)' is not a field name")
            }
            guard let column = columns.column(term.field) else {
                throw TableStorageError(code: .badQuery, message: "$orderby: the table has no field '\(term.field)'")
            }
            order =
                order
                + dialect.orderTerm(column, descending: term.descending, nullable: columns.isNullableField(term.field))
                + SQLFragment(", ")
        }
        // `id` last: the order is total, so pages never overlap or skip a row. (A test's server
        // may order ties at random instead, as the protocol allows.)
        if shuffledTies, !orderBy.isEmpty { return (condition, order + SQLFragment("random()")) }
        order = order + dialect.orderTerm((SQLFragment("id"), .text), descending: false)
        return (condition, order)
    }

    /// Refuses a `$select` naming something that is not a field name, or (a declared table) a
    /// field the table does not have.
    static func checkSelect(_ select: [String]?, _ columns: WireColumns) throws(TableStorageError) {
        for name in select ?? [] {
            guard TableColumnName.isValid(name) else {
                throw TableStorageError(code: .badQuery, message: "$select: '\(name)' is not a field name")
            }
            guard columns.schema == nil || columns.column(name) != nil else {
                throw TableStorageError(code: .badQuery, message: "$select: the table has no field '\(name)'")
            }
        }
    }
}
