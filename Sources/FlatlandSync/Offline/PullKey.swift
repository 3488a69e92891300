/// Where an incremental pull stands: the last row pulled, by its `updatedAt` and its id. A key
/// without an id (a delta token kept by an older version, a date alone) stands before every row
/// of its `updatedAt`.
struct PullKey: Sendable, Hashable {
    var updatedAt: TableTimestamp
    var id: String?

    /// The key a stored token says: `T` (a date, as older versions and the official-client
    /// paging keep it) or `T`, a tab, and the id.
    init(token: String) throws(TableQueryError) {
        if let tab = token.firstIndex(of: "\t") {
            updatedAt = try TableTimestamp(parsing: String(token[..<tab]))
            id = String(token[token.index(after: tab)...])
        } else {
            updatedAt = try TableTimestamp(parsing: token)
            id = nil
        }
    }

    init(updatedAt: TableTimestamp, id: String?) {
        self.updatedAt = updatedAt
        self.id = id
    }

    /// The token kept in the file.
    var token: String { updatedAt.description + (id.map { "\t" + $0 } ?? "") }
}
