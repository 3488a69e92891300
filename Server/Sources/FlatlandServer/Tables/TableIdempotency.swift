import FlatlandJSON

/// The idempotency key a write was sent with (`Idempotency-Key`), and what to remember of it.
///
/// The storage keeps `(scope, key) → (method, path, status, row)` in the write's own
/// transaction; a later write with the same scope and key, while the record lives, is answered
/// from it (see ``TableStorage``). A storage adds one table for the records (the SQLite one:
/// `flatland_table_idempotency`) and checks and writes it inside each write's transaction.
struct TableIdempotency: Sendable, Hashable {
    /// Whose keys these are: the caller's user, or "" for an anonymous caller.
    var scope: String
    /// The key as the client sent it.
    var key: String
    /// The request's method (`POST`, `PATCH`, `PUT`, `DELETE`).
    var method: String
    /// The request's path, without its query (`/tables/todoitem/1`).
    var path: String
    /// The status the write answers with when it succeeds.
    var status: Int
    /// How long the record is answered, in microseconds.
    var ttl: Int64
    /// The largest row (its fields' JSON, in bytes) the record keeps a copy of; a larger one is
    /// remembered by its version only (see ``TableIdempotencyRecord/complete``).
    var maxRowBytes: Int = TableIdempotency.defaultMaxRowBytes
    /// The most records one scope keeps: past it, its oldest are forgotten.
    var maxPerScope: Int = TableIdempotency.defaultMaxPerScope

    /// How many records past ``maxPerScope`` a scope may hold between two prunings: an eighth
    /// of the cap (none below 8). The newest ``maxPerScope`` are always kept; a storage that
    /// prunes at every write (PostgreSQL, once a batch) keeps no more.
    var pruneSlack: Int { maxPerScope / 8 }

    /// The default ``maxRowBytes``: 16 KiB.
    static let defaultMaxRowBytes = 16 << 10
    /// The default ``maxPerScope``: 1,000.
    static let defaultMaxPerScope = 1000

    /// The fields' JSON text as the record keeps it: `data` itself, or `null` past
    /// ``maxRowBytes``.
    func kept(_ data: String) -> String { data.utf8.count <= maxRowBytes ? data : "null" }
}

/// A write remembered under its idempotency key: what it answered.
struct TableIdempotencyRecord: Sendable, Equatable {
    var method: String
    var path: String
    var status: Int
    /// The row the write answered with (the row as it was then); without its fields when
    /// ``complete`` is false.
    var row: TableRow
    /// Whether ``row`` holds the row's fields: false for a row larger than the record keeps
    /// (``TableIdempotency/maxRowBytes``), whose replay is answered from the row as it is now
    /// if its version is still the recorded one.
    var complete = true

    /// A record read back from a storage: `data` is the fields' JSON text as kept (`null`: not
    /// kept).
    static func stored(
        method: String, path: String, status: Int, id: String, createdAt: Int64, updatedAt: Int64, version: Int64,
        deleted: Bool, data: String
    ) throws(TableStorageError) -> TableIdempotencyRecord {
        let value: JSONValue
        do { value = try JSONValue(parsing: data) } catch {
            throw TableStorageError(code: .storage, message: "a remembered row is not JSON: \(error)")
        }
        let fields: JSONObject
        switch value {
        case .object(let object): fields = object
        case .null: fields = JSONObject()
        default: throw TableStorageError(code: .storage, message: "a remembered row is not a JSON object")
        }
        let row = TableRow(
            id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, fields: fields)
        return TableIdempotencyRecord(method: method, path: path, status: status, row: row, complete: value != .null)
    }
}
