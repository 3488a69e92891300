/// How far a push or a pull has gone: what ``SyncContext/progress()`` hands out.
public enum SyncProgress: Sendable, Hashable {
    /// A push settled operation `sent` of `total` (whatever the outcome).
    case push(sent: Int, total: Int)
    /// A pull of `table` committed its page `pages` (counted from 1), `rows` rows so far.
    case pull(table: String, pages: Int, rows: Int)
}
