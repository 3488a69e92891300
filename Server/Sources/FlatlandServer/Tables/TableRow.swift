@_spi(FlatlandInternal) import Flatland
@_spi(FlatlandInternal) import FlatlandJSON
import Foundation

/// A table the server serves at `/tables/{name}`.
public struct TableDefinition: Sendable, Hashable {
    /// The table's name, as it stands in the path.
    public var name: String
    /// Whether a delete marks the row `deleted` (kept, and sent to incremental pulls) instead of
    /// removing it.
    public var softDelete: Bool
    /// Who may read and write it (see <doc:ServingTables>): anyone by default.
    public var access: TableAccess
    /// The fields it declares, each in a typed column; nil (the default): free-form JSON rows.
    public var schema: TableSchema?

    /// A table of free-form JSON rows, or of the fields `schema` declares. Every table accepts
    /// an insert without an `id` (or with `"id": null`) and gives the row a server-generated
    /// one: 32 lowercase hex characters.
    public init(name: String, softDelete: Bool = true, access: TableAccess = .anonymous, schema: TableSchema? = nil) {
        self.name = name
        self.softDelete = softDelete
        self.access = access
        self.schema = schema
    }

    /// Whether `name` may name a table: 1 to 64 letters, digits, `_` or `-`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { b in
                (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x5F
                    || b == 0x2D
            }
    }
}

/// Who may use a table served at `/tables/{name}`.
///
/// A caller is known by a session token of the server's users, sent as `Authorization: Bearer
/// <token>` or `X-ZUMO-AUTH: <token>` (as the Azure clients send it). Under every level a request
/// *with* a token the server does not know is a 401, as in the seed's API.
public enum TableAccess: String, Sendable, Hashable, CaseIterable {
    /// Anyone, with or without a token (the default, and the default `todoitem` table's).
    case anonymous
    /// Any confirmed session of the server's users: no token is a 401, an unconfirmed
    /// registration a 403.
    case authenticated
    /// As ``authenticated``, and each row belongs to the user who inserted it: another user's
    /// rows are absent from queries and a 404 on lookup, update, delete and undelete; an insert
    /// of an id another user owns is a 409 without the row. The owner is kept beside the row on
    /// the server and never sent on the wire.
    case perUser
}

/// One row of a table as the server keeps it: the client's fields and the system properties
/// the server sets.
struct TableRow: Sendable, Equatable {
    var id: String
    /// Microseconds since the epoch.
    var createdAt: Int64
    /// Microseconds since the epoch; strictly increasing over every write to the table.
    var updatedAt: Int64
    /// Changes on every write; sent as the ETag.
    var version: Int64
    var deleted: Bool
    /// The client's fields, in the order they were first written (no id, no system property).
    var fields: JSONObject

    /// The opaque version string: the counter's eight bytes, big-endian, in base64 (as the Azure
    /// servers' `rowversion`s look).
    var versionString: String { TableRow.versionString(version) }

    static func versionString(_ version: Int64) -> String {
        var bytes: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: version >> shift)) }
        return Data(bytes).base64EncodedString()
    }

    /// The counter a version string names, or nil when it names none.
    static func version(from text: String) -> Int64? {
        guard let bytes = Data(base64Encoded: text), bytes.count == 8 else { return nil }
        return bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// A date as the server writes it: UTC, microseconds.
    static func dateString(_ micros: Int64) -> String {
        let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
        return ISO8601.format(
            seconds: Int(seconds), fraction: Int(micros - seconds * 1_000_000), digits: 6, suffix: "Z")
    }

    /// Writes the row as ``json(_:select:)`` gives it, straight to `writer` (the list route's
    /// rows, without building an object for each).
    func write(to writer: inout JSONWriter, _ wire: TableWire, select: [String]? = nil) {
        writer.beginObject()
        // `$select` gives exactly the members it names, `id` too (as Datasync does).
        if select.map({ $0.contains("id") }) ?? true {
            writer.key("id")
            writer.string(id)
        }
        for (key, value) in fields.members where select.map({ $0.contains(key) }) ?? true {
            writer.key(key)
            writer.value(value)
        }
        Self.writeSystemProperties(
            to: &writer, wire, select: select, createdAt: createdAt, updatedAt: updatedAt, version: version,
            deleted: deleted)
        writer.endObject()
    }

    /// A stored row as the list route writes it, straight from its stored fields' JSON text (their
    /// members copied, not read as values): the same bytes as ``write(to:_:select:)`` with no
    /// selection. Nil when the text is not a JSON object. `writer` is reset first.
    static func encoded(
        id: String, storedFields: String, createdAt: Int64, updatedAt: Int64, version: Int64, deleted: Bool,
        _ wire: TableWire, using writer: inout JSONWriter
    ) -> [UInt8]? {
        writer.reset()
        writer.beginObject()
        writer.key("id")
        writer.string(id)
        guard writer.json(membersOf: storedFields) else { return nil }
        writeSystemProperties(
            to: &writer, wire, select: nil, createdAt: createdAt, updatedAt: updatedAt, version: version,
            deleted: deleted)
        writer.endObject()
        return writer.bytes
    }

    /// Hands `body` the system properties that end a row's object, in order, under the
    /// protocol's names (v1: only those in `systemProperties`), only those in `select` when given.
    /// (A visitor, not a list: the list route writes them for every row it serves.)
    static func forEachSystemMember(
        _ wire: TableWire, select: [String]?, createdAt: Int64, updatedAt: Int64, version: Int64, deleted: Bool,
        _ body: (String, JSONValue) -> Void
    ) {
        for property in wire.systemProperties {
            let name = property.name(wire.version)
            guard select.map({ $0.contains(name) }) ?? true else { continue }
            switch property {
            case .createdAt: body(name, .string(dateString(createdAt)))
            case .updatedAt: body(name, .string(dateString(updatedAt)))
            case .version: body(name, .string(versionString(version)))
            case .deleted: body(name, .bool(deleted))
            }
        }
    }

    /// Writes ``forEachSystemMember(_:select:createdAt:updatedAt:version:deleted:_:)``'s members
    /// into the object begun in `writer`.
    static func writeSystemProperties(
        to writer: inout JSONWriter, _ wire: TableWire, select: [String]?, createdAt: Int64, updatedAt: Int64,
        version: Int64, deleted: Bool
    ) {
        forEachSystemMember(
            wire, select: select, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted
        ) { key, value in
            writer.key(key)
            writer.value(value)
        }
    }

    /// The row as JSON for a client of `version`: `id`, the fields, then the system
    /// properties (``forEachSystemMember(_:select:createdAt:updatedAt:version:deleted:_:)``).
    func json(_ wire: TableWire, select: [String]? = nil) -> JSONObject {
        var object = JSONObject()
        if select.map({ $0.contains("id") }) ?? true { object.members.append((key: "id", value: .string(id))) }
        for (key, value) in fields.members where select.map({ $0.contains(key) }) ?? true {
            object.members.append((key: key, value: value))
        }
        Self.forEachSystemMember(
            wire, select: select, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted
        ) { key, value in object.members.append((key: key, value: value)) }
        return object
    }
}

/// A version of the table protocol the server speaks: v1 (Azure Mobile Services), v2 (Azure
/// Mobile Apps), v3 (Datasync).
public enum TableProtocolVersion: String, Sendable, Hashable, CaseIterable {
    case v1, v2, v3
}

/// The protocol version of one request, and what it asked for.
struct TableWire: Sendable, Equatable {
    typealias Version = TableProtocolVersion
    enum SystemProperty: Sendable, Equatable, CaseIterable {
        case createdAt, updatedAt, version, deleted
        func name(_ version: Version) -> String {
            let base: String
            switch self {
            case .createdAt: base = "createdAt"
            case .updatedAt: base = "updatedAt"
            case .version: base = "version"
            case .deleted: base = "deleted"
            }
            return version == .v1 ? "__" + base : base
        }
    }

    var version: Version
    /// The system properties a response carries: v2 all, v3 all but `createdAt`, v1 those asked
    /// for with `__systemproperties`.
    var systemProperties: [SystemProperty]

    static let v2 = TableWire(version: .v2, systemProperties: SystemProperty.allCases)
    static let v3 = TableWire(version: .v3, systemProperties: [.updatedAt, .version, .deleted])

    /// The system property a wire name names in this version, if any.
    func systemProperty(named name: String) -> SystemProperty? {
        SystemProperty.allCases.first { $0.name(version) == name && (version != .v3 || $0 != .createdAt) }
    }
}
