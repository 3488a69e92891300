import FlatlandJSON

/// One local change waiting to be pushed: a row of the operation queue.
public struct SyncOperation: Sendable, Hashable {
    /// What the operation does on the server.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// `POST` the local row.
        case insert
        /// `PATCH` (or `PUT` in v3) the local row, with `If-Match`.
        case update
        /// `DELETE` the row, with `If-Match`.
        case delete
    }

    /// Where the operation is in its life.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Not sent yet.
        case pending
        /// Sent at least once, with no answer that settled it (a dropped connection, an abort):
        /// the server may or may not have applied it.
        case attempted
        /// Answered with an error or a conflict nobody resolved; ``status``, ``serverItem`` and
        /// ``error`` say what.
        case failed
    }

    /// Its place in the queue: operations are pushed in this order.
    public var sequence: Int64
    /// The table.
    public var table: String
    /// The row's server id.
    public var itemID: String
    /// What it does.
    public var kind: Kind
    /// Where it is.
    public var state: State
    /// The version the change was based on: sent as `If-Match`.
    public var version: String?
    /// For a delete, the row as it was when deleted.
    public var item: JSONObject?
    /// How many local changes this operation stands for (collapsed changes count up).
    public var changes: Int
    /// The HTTP status of the last failed attempt.
    public var status: Int?
    /// The server's row from the last failed attempt (a 412 or 409).
    public var serverItem: JSONObject?
    /// The raw body of the last failed attempt.
    public var rawBody: [UInt8]?
    /// What went wrong in the last failed attempt.
    public var error: String?
    /// The idempotency key its request is sent with (`Idempotency-Key`): a UUID kept while the
    /// request stays the same (a retry, the next push), and a new one whenever the operation
    /// changes (a collapsed change, a new `If-Match`, a client-wins resend), so a server that
    /// remembers keys answers a replay with its first answer and applies the change once.
    public var key: String
}
