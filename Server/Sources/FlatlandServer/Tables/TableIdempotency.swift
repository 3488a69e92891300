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
}

/// A write remembered under its idempotency key: what it answered.
struct TableIdempotencyRecord: Sendable, Equatable {
    var method: String
    var path: String
    var status: Int
    /// The row the write answered with (the row as it was then).
    var row: TableRow
}
