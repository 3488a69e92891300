import Flatland
import FlatlandJSON

/// The properties a table server keeps on every row: when it was created and last changed, its
/// version (the row's ETag), and whether it is soft-deleted.
///
/// They live beside a row's own fields and are never sent in a request body: the version goes to
/// `If-Match` instead, and the server sets the rest.
public struct TableSystemProperties: Sendable, Hashable {
    /// When the server created the row (v1 and v2; Datasync v3 has no `createdAt`).
    public var createdAt: TableTimestamp?
    /// When the server last changed the row, with the server's own text at full precision
    /// (``TableTimestamp/text``): incremental pulls filter on it.
    public var updatedAt: TableTimestamp?
    /// The row's version: opaque text, compared only for equality.
    public var version: String?
    /// Whether the row is soft-deleted.
    public var deleted: Bool

    /// System properties; a new row has none.
    public init(
        createdAt: TableTimestamp? = nil, updatedAt: TableTimestamp? = nil, version: String? = nil,
        deleted: Bool = false
    ) {
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.deleted = deleted
    }

    /// The system properties found in a row's JSON under `version`'s names (`updatedAt`, or
    /// `__updatedAt` in v1); a member that is not of the right type is ignored.
    public init(row: JSONObject, protocol version: TableProtocol) {
        func text(_ property: SystemProperties) -> String? {
            guard let name = version.name(of: property), case .string(let s)? = row[name] else { return nil }
            return s
        }
        createdAt = text(.createdAt).flatMap { try? TableTimestamp(parsing: $0) }
        updatedAt = text(.updatedAt).flatMap { try? TableTimestamp(parsing: $0) }
        self.version = text(.version)
        if let name = version.name(of: .deleted), case .bool(let b)? = row[name] {
            deleted = b
        } else {
            deleted = false
        }
    }
}

/// A typed entity that is a row of a server table: a Flatland `Entity` with its
/// ``TableSystemProperties``.
///
/// Declare the row's own fields and add ``systemFields``, which reads the system properties
/// under every protocol's names:
///
/// ```swift
/// struct TodoItem: TableEntity {
///     static let prefix = "todo"
///     var id: EntityID<TodoItem>
///     var text = ""
///     var complete = false
///     var system = TableSystemProperties()
///     init(id: EntityID<TodoItem>) { self.id = id }
///     static let fields: [Field<TodoItem>] = [Field("text", \.text), Field("complete", \.complete)] + systemFields
/// }
/// ```
///
/// The store id is `<prefix>-<server id>` (``TableRowID``).
public protocol TableEntity: Entity {
    /// The row's system properties.
    var system: TableSystemProperties { get set }
}

extension TableEntity {
    /// Fields for the system properties under the names of every protocol (`createdAt` and
    /// `__createdAt`, and so on): add them to `Entity.fields`. A table never writes them into a
    /// request body.
    public static var systemFields: [Field<Self>] {
        [
            Field("createdAt", \Self.system.createdAt), Field("__createdAt", \Self.system.createdAt),
            Field("updatedAt", \Self.system.updatedAt), Field("__updatedAt", \Self.system.updatedAt),
            Field("version", \Self.system.version), Field("__version", \Self.system.version),
            Field("deleted", \Self.system.deleted), Field("__deleted", \Self.system.deleted),
        ]
    }

    /// The server's id of this row: the store id without its prefix (``TableRowID``).
    public var serverID: String { TableRowID.serverID(fromStoreID: id.rawValue, prefix: Self.prefix) }
}

extension TableTimestamp: FieldValue {
    public static func decode(from reader: inout FieldReader) throws(FieldError) -> TableTimestamp {
        let text = try reader.readString()
        do {
            return try TableTimestamp(parsing: text)
        } catch {
            throw FieldError("expected an ISO 8601 date and time with a zone, found \"\(text)\"")
        }
    }

    /// Writes the server's own text when there is one, else every digit in UTC.
    public func encode(to writer: inout JSONWriter) { writer.string(text ?? formatted(.nanoseconds)) }
}

/// How a table row's server id maps to its store id, and back.
///
/// The server's `id` travels unchanged on the wire; in the store the row is
/// `<prefix>-<server id>`, always, even when the server id already starts with the prefix (so
/// the mapping is one to one: `todo-abc` on the server is `todo-todo-abc` in the store).
public enum TableRowID {
    /// The store id of the row with `serverID`.
    public static func storeID(serverID: String, prefix: String) -> String { prefix + "-" + serverID }

    /// The server id of the row stored as `storeID` (the id itself when it does not carry the
    /// prefix).
    public static func serverID(fromStoreID storeID: String, prefix: String) -> String {
        let head = prefix + "-"
        return storeID.hasPrefix(head) ? String(storeID.dropFirst(head.count)) : storeID
    }

    /// A new client-side row id: 32 lowercase hexadecimal characters (a random UUID without
    /// its dashes), as the official clients make them.
    public static func generate() -> String {
        let hex = Array("0123456789abcdef".utf8)
        var bytes = [UInt8](repeating: 0, count: 32)
        var bits = UInt64.random(in: .min ... .max)
        for i in 0..<32 {
            if i == 16 { bits = UInt64.random(in: .min ... .max) }
            bytes[i] = hex[Int(bits & 15)]
            bits >>= 4
        }
        // Version 4 and the RFC 4122 variant, so the id is a valid UUID written without dashes.
        bytes[12] = UInt8(ascii: "4")
        bytes[16] = hex[8 + Int(bits & 3)]
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A store prefix made from a table name: its letters and digits in lower case, starting
    /// with a letter (`stringId_test_table` → `stringidtesttable`). Two names may give one
    /// prefix: give such tables their own.
    public static func prefix(forTable name: String) -> String {
        var out = ""
        for scalar in name.lowercased().unicodeScalars
        where ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) {
            out.unicodeScalars.append(scalar)
        }
        if out.first.map({ !$0.isLetter }) ?? true { out = "t" + out }
        return out
    }
}
