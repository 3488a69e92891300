@_spi(FlatlandInternal) import Flatland
@_spi(FlatlandInternal) import FlatlandJSON
import Foundation

/// The fields a table declares, with their types: a table with a schema keeps each field in a
/// typed column (indexed where the field asks for it), refuses a body whose values do not fit,
/// and answers 400 to a field it does not declare in `$filter`, `$orderby` or `$select`.
///
/// Without a schema a table's rows are free-form JSON (the default). See <doc:ServingTables>
/// for the type of each field on SQLite and PostgreSQL, and
/// ``TableSchema/parseFile(_:)`` for the file `flatland serve --table-schemas` reads:
///
/// ```json
/// {
///   "movies": {
///     "softDelete": true,
///     "fields": {
///       "title": "string",
///       "year": {"type": "int", "index": true},
///       "rating": {"enum": ["Unrated", "G", "PG", "PG13", "R", "NC17"]},
///       "releaseDate": {"type": "date", "nullable": true}
///     }
///   }
/// }
/// ```
public struct TableSchema: Sendable, Hashable {
    /// The declared fields, in the order they were declared.
    public var fields: [Field]

    /// One declared field.
    public struct Field: Sendable, Hashable {
        /// Its name: a letter or `_`, then letters, digits and `_`; not `id` nor a system
        /// property's name.
        public var name: String
        /// What its values are (``FieldType``).
        public var type: FieldType
        /// Whether `null` (or leaving the field out) is allowed.
        public var nullable: Bool
        /// Whether its column is indexed (for filters and orders on it).
        public var indexed: Bool

        /// A field named `name` of `type`, not nullable and not indexed unless asked.
        public init(_ name: String, _ type: FieldType, nullable: Bool = false, indexed: Bool = false) {
            self.name = name
            self.type = type
            self.nullable = nullable
            self.indexed = indexed
        }
    }

    /// The type of a declared field, and what a value of it is written as in JSON.
    public enum FieldType: Sendable, Hashable {
        /// A JSON string.
        case string
        /// `true` or `false`.
        case bool
        /// A whole number that fits in 64 bits.
        case int
        /// A number (a 64-bit float).
        case double
        /// A number kept exactly (PostgreSQL `numeric`; SQLite keeps it as a float for
        /// comparisons, and its JSON as written).
        case decimal
        /// A calendar date, `yyyy-MM-dd`.
        case date
        /// A time of day, `HH:mm:ss[.fffffff]`.
        case time
        /// An instant, ISO 8601 with an offset (`2024-05-01T10:00:00.000Z`).
        case datetime
        /// A GUID, `8-4-4-4-12` hex digits.
        case guid
        /// Bytes, as base64 text.
        case bytes
        /// Any JSON value.
        case json
        /// One of these names (a JSON string), ordered and compared in this order.
        case enumeration([String])
    }

    /// A schema of these fields (see ``problem`` for what makes one valid).
    public init(fields: [Field]) { self.fields = fields }

    /// The field named `name`, if declared.
    public func field(_ name: String) -> Field? { fields.first { $0.name == name } }

    /// Why these declarations cannot make a schema (a name used twice, a name that is not a
    /// field name, a reserved name, an empty or repeated enumeration), or nil when they can.
    public var problem: String? {
        var seen = Set<String>()
        for field in fields {
            guard TableColumnName.isValid(field.name) else { return "'\(field.name)' is not a field name" }
            guard !Self.reserved.contains(field.name.lowercased()) else {
                return "'\(field.name)' is reserved for the row's id and system properties"
            }
            guard seen.insert(field.name).inserted else { return "the field '\(field.name)' is declared twice" }
            if case .enumeration(let names) = field.type {
                guard !names.isEmpty else { return "the enumeration of '\(field.name)' has no names" }
                guard Set(names).count == names.count else {
                    return "the enumeration of '\(field.name)' names a value twice"
                }
                for name in names where name.isEmpty || name.utf8.count > 128 {
                    return "the enumeration of '\(field.name)' has an empty or overlong name"
                }
            }
        }
        return nil
    }

    /// Names a field cannot have: the id and every protocol's system properties.
    static let reserved: Set<String> = [
        "id", "createdat", "updatedat", "version", "deleted", "__createdat", "__updatedat", "__version", "__deleted",
    ]
}

/// A schema file, or a row's body, that does not fit: what and where.
public struct TableSchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it is.
    public enum Code: Sendable, Hashable {
        /// The schema file is not what ``TableSchema/parseFile(_:)`` reads.
        case badSchema
        /// A value does not fit its field's type, or the field is not declared.
        case badValue
    }

    /// What kind of problem it is.
    public var code: Code
    /// What does not fit, and where (`movies.year: 'integer' is not a type`).
    public var message: String
    public var description: String { message }
}

extension TableSchema {
    /// A table's entry in a schema file: its schema and whether a delete is soft.
    public struct Declaration: Sendable, Hashable {
        /// The fields it declares.
        public var schema: TableSchema
        /// Whether a delete marks the row deleted (true when the file does not say).
        public var softDelete: Bool
    }

    /// Reads a schema file: a JSON object of table name → `{"fields": {NAME: TYPE, …},
    /// "softDelete": true|false}` (`softDelete` true when absent), where TYPE is one of
    /// `"string"`, `"bool"`, `"int"`, `"double"`, `"decimal"`, `"date"`, `"time"`, `"datetime"`,
    /// `"guid"`, `"bytes"`, `"json"`, or `{"enum": [NAME, …]}`, or `{"type": TYPE, "nullable":
    /// true, "index": true}` (either member optional). The tables in the order written.
    public static func parseFile(_ bytes: [UInt8]) throws(TableSchemaError) -> [(
        name: String, declaration: Declaration
    )] {
        func bad(_ message: String) -> TableSchemaError { TableSchemaError(code: .badSchema, message: message) }
        let root: JSONValue
        do { root = try JSONValue(parsing: bytes) } catch { throw bad("the schema file is not JSON: \(error)") }
        guard case .object(let tables) = root else { throw bad("the schema file must be a JSON object of tables") }
        var out: [(name: String, declaration: Declaration)] = []
        for (name, value) in tables.members {
            guard TableDefinition.isValidName(name) else { throw bad("'\(name)' is not a table name") }
            guard !out.contains(where: { $0.name.lowercased() == name.lowercased() }) else {
                throw bad("the table '\(name)' is declared twice")
            }
            guard case .object(let table) = value else { throw bad("\(name): a table is a JSON object") }
            var softDelete = true
            var fields: [Field] = []
            for (key, member) in table.members {
                switch key {
                case "softDelete":
                    guard case .bool(let b) = member else { throw bad("\(name).softDelete must be true or false") }
                    softDelete = b
                case "fields":
                    guard case .object(let declared) = member else { throw bad("\(name).fields must be a JSON object") }
                    for (field, spec) in declared.members {
                        fields.append(try self.field(field, spec, in: name))
                    }
                default:
                    throw bad("\(name): '\(key)' is not a member of a table (fields, softDelete)")
                }
            }
            let schema = TableSchema(fields: fields)
            if let problem = schema.problem { throw bad("\(name): \(problem)") }
            out.append((name, Declaration(schema: schema, softDelete: softDelete)))
        }
        return out
    }

    private static func field(_ name: String, _ spec: JSONValue, in table: String) throws(TableSchemaError) -> Field {
        func bad(_ message: String) -> TableSchemaError {
            TableSchemaError(code: .badSchema, message: "\(table).\(name): \(message)")
        }
        switch spec {
        case .string(let word):
            guard let type = FieldType(word: word) else { throw bad("'\(word)' is not a type") }
            return Field(name, type)
        case .object(let object):
            var type: FieldType?
            var nullable = false
            var indexed = false
            for (key, value) in object.members {
                switch (key, value) {
                case ("type", .string(let word)):
                    guard let t = FieldType(word: word) else { throw bad("'\(word)' is not a type") }
                    type = t
                case ("type", .object):
                    type = try field(name, value, in: table).type
                case ("enum", .array(let items)):
                    var names: [String] = []
                    for item in items {
                        guard case .string(let s) = item else { throw bad("an enumeration's names are strings") }
                        names.append(s)
                    }
                    type = .enumeration(names)
                case ("nullable", .bool(let b)): nullable = b
                case ("index", .bool(let b)): indexed = b
                default:
                    throw bad(
                        "'\(key)' is not a member of a field (type, enum, nullable, index), or its value is wrong")
                }
            }
            guard let type else { throw bad("a field needs a type") }
            return Field(name, type, nullable: nullable, indexed: indexed)
        default:
            throw bad("a field is a type name or an object")
        }
    }
}

extension TableSchema.FieldType {
    /// The type a schema file's word names.
    init?(word: String) {
        switch word {
        case "string": self = .string
        case "bool": self = .bool
        case "int": self = .int
        case "double": self = .double
        case "decimal": self = .decimal
        case "date": self = .date
        case "time": self = .time
        case "datetime": self = .datetime
        case "guid": self = .guid
        case "bytes": self = .bytes
        case "json": self = .json
        default: return nil
        }
    }
}

extension TableSchema {
    /// Why `fields` (a body's fields, without `id` and system properties) do not fit, or nil.
    /// `partial` (a PATCH): fields left out are not missing.
    func problem(_ fields: JSONObject, partial: Bool) -> String? {
        for (name, value) in fields.members {
            guard let field = field(name) else { return "the table has no field '\(name)'" }
            if let problem = field.problem(value) { return "the field '\(name)' \(problem)" }
        }
        guard !partial else { return nil }
        for field in self.fields where !field.nullable && fields[field.name] == nil {
            return "the field '\(field.name)' is missing (it is not nullable)"
        }
        return nil
    }
}

extension TableSchema.Field {
    /// Why `value` does not fit this field, or nil.
    func problem(_ value: JSONValue) -> String? {
        if case .null = value { return nullable ? nil : "cannot be null" }
        switch (type, value) {
        case (.json, _): return nil
        case (.string, .string): return nil
        case (.bool, .bool): return nil
        case (.int, .number):
            let text = value.jsonString()
            return Int64(text) != nil ? nil : "must be a whole number that fits in 64 bits"
        case (.double, .number), (.decimal, .number):
            return Double(value.jsonString()).map { $0.isFinite } == true ? nil : "must be a finite number"
        case (.date, .string(let s)):
            let bytes = Array(s.utf8)
            return bytes.count == 10 && ODataFilterParser.dateLength(bytes, 0) == 10
                && ODataFilterParser.validDate(bytes) ? nil : "must be a date, yyyy-MM-dd"
        case (.time, .string(let s)):
            let bytes = Array(s.utf8)
            guard bytes.count >= 8, let time = ODataFilterParser.timeOfDay(bytes, 0), time.length == bytes.count else {
                return "must be a time of day, HH:mm:ss[.fffffff]"
            }
            return nil
        case (.datetime, .string(let s)):
            var text = s
            let instant = text.withUTF8 { ISO8601.instant(UnsafeRawBufferPointer($0), requiresZone: true) }
            let bytes = Array(s.utf8)
            return instant == nil || ODataFilterParser.dateLength(bytes, 0) != 10
                ? "must be a date and time with an offset (ISO 8601)" : nil
        case (.guid, .string(let s)):
            let bytes = Array(s.utf8)
            return bytes.count == 36 && ODataFilterParser.guidLength(bytes, 0) == 36 ? nil : "must be a GUID"
        case (.bytes, .string(let s)):
            return Data(base64Encoded: s) == nil ? "must be base64" : nil
        case (.enumeration(let names), .string(let s)):
            return names.contains(s) ? nil : "must be one of " + names.joined(separator: ", ")
        default:
            return "must be \(type.description)"
        }
    }
}

extension TableSchema.FieldType: CustomStringConvertible {
    /// The type in words, as an answer that refuses a value says it (`a whole number`).
    public var description: String {
        switch self {
        case .string: "a string"
        case .bool: "true or false"
        case .int: "a whole number"
        case .double, .decimal: "a number"
        case .date: "a date, yyyy-MM-dd"
        case .time: "a time of day, HH:mm:ss[.fffffff]"
        case .datetime: "a date and time with an offset (ISO 8601)"
        case .guid: "a GUID"
        case .bytes: "base64 text"
        case .json: "any JSON value"
        case .enumeration(let names): "one of " + names.joined(separator: ", ")
        }
    }
}
