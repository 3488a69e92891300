/// How a declared field is kept: a typed column generated from the row's JSON (the JSON stays
/// what a row is read from and written as; the column is what filters, orders and indexes
/// use), in each dialect.
///
/// | Type | SQLite | PostgreSQL |
/// |---|---|---|
/// | string, guid, bytes, date, time | `TEXT` | `text COLLATE "C"` |
/// | enum | `TEXT` (ordered by declared position) | `text COLLATE "C"` (same) |
/// | bool | `INTEGER` (0, 1) | `boolean` |
/// | int | `INTEGER` | `bigint` |
/// | double | `REAL` | `double precision` |
/// | decimal | `REAL` | `numeric` |
/// | datetime | `INTEGER`, ms since the epoch × 1000 | `bigint`, µs since the epoch |
/// | json | none (read from the row's JSON) | none |
///
/// The field's name is a field name (``TableColumnName``): it is written into the column's
/// definition as it is, never a client's text.
extension TableSchema.Field {
    /// The column's name, quoted.
    var column: String { "\"f_\(name)\"" }

    /// Whether the field has a column of its own (a `json` field has none).
    var hasColumn: Bool { type != .json }

    /// What its column holds, for comparing.
    var kind: ColumnKind {
        switch type {
        case .string, .guid, .bytes, .date, .time: .text
        case .enumeration(let names): .enumeration(names)
        case .bool: .bool
        case .int, .double, .decimal: .number
        case .datetime: .date
        case .json: .json
        }
    }

    /// The column's definition in SQLite (generated from `data`, virtual so that a table from
    /// before the schema gains it with `ALTER TABLE`).
    var sqliteDefinition: String {
        let value = "json_extract(data, '$.\(name)')"
        let (type, expression): (String, String)
        switch self.type {
        case .string, .guid, .bytes, .date, .time, .enumeration, .json: (type, expression) = ("TEXT", value)
        case .bool, .int: (type, expression) = ("INTEGER", value)
        case .double, .decimal: (type, expression) = ("REAL", value)
        case .datetime:
            (type, expression) = (
                "INTEGER",
                "CAST(round((julianday(CASE WHEN json_type(data, '$.\(name)') = 'text' THEN \(value) END) - 2440587.5) * 86400000) AS INTEGER) * 1000"
            )
        }
        return "\(column) \(type) GENERATED ALWAYS AS (\(expression)) VIRTUAL"
    }

    /// The column's definition in PostgreSQL (generated from `data`, stored); `micros` is the
    /// schema's function reading text as microseconds since the epoch.
    func postgresDefinition(micros: String) -> String {
        let text = "(data::jsonb ->> '\(name)')"
        let (type, expression): (String, String)
        switch self.type {
        case .string, .guid, .bytes, .date, .time, .enumeration, .json:
            (type, expression) = ("text COLLATE \"C\"", text)
        case .bool: (type, expression) = ("boolean", "\(text)::boolean")
        case .int: (type, expression) = ("bigint", "\(text)::bigint")
        case .double: (type, expression) = ("double precision", "\(text)::double precision")
        case .decimal: (type, expression) = ("numeric", "\(text)::numeric")
        case .datetime: (type, expression) = ("bigint", "\(micros)\(text)")
        }
        return "\(column) \(type) GENERATED ALWAYS AS (\(expression)) STORED"
    }
}

/// A table's columns under a request's names: `id`, the system properties, and (with a schema)
/// the declared fields in their typed columns, any other name absent; without a schema every
/// other name is a field of the row's JSON.
extension WireColumns {
    func declared(_ member: String) -> (sql: SQLFragment, kind: ColumnKind)? {
        guard let schema else { return wire.column(member, dialect: dialect) }
        if member == "id" || wire.systemProperty(named: member) != nil { return wire.column(member, dialect: dialect) }
        guard let field = schema.field(member) else { return nil }
        guard field.hasColumn else { return (dialect.jsonField(member), .json) }
        return (SQLFragment(field.column), field.kind)
    }
}

extension SQLDialect {
    /// The position of an enumeration's value among its names (NULL for none): how it orders
    /// and compares.
    func position(_ value: SQLFragment, _ names: [String]) -> SQLFragment {
        var sql = SQLFragment("(CASE ") + value
        for (k, name) in names.enumerated() { sql = sql + SQLFragment(" WHEN ? THEN \(k)", [.text(name)]) }
        return sql + SQLFragment(" END)")
    }
}
