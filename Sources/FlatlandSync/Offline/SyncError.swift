import FlatlandJSON

/// What went wrong in an offline operation (``SyncError/code``).
public struct SyncErrorCode: Hashable, Sendable, CustomStringConvertible {
    let name: String

    /// The session does not keep its store in SQLite: the queue needs the same file.
    public static let notPersistent = SyncErrorCode(name: "notPersistent")
    /// The change cannot follow the operation already queued for the row (an insert after an
    /// insert or an update, anything after a delete).
    public static let invalidOperation = SyncErrorCode(name: "invalidOperation")
    /// The change carries a version other than the one stored for the row: it was made on a
    /// stale copy.
    public static let staleVersion = SyncErrorCode(name: "staleVersion")
    /// No local row has this id.
    public static let notFound = SyncErrorCode(name: "notFound")
    /// The table has operations not pushed yet (a purge without force).
    public static let pendingOperations = SyncErrorCode(name: "pendingOperations")
    /// The push before a pull did not empty the table's queue; the pull was cancelled.
    public static let pushFailed = SyncErrorCode(name: "pushFailed")
    /// A request failed (``SyncError/tableError`` says how).
    public static let http = SyncErrorCode(name: "http")
    /// The store or its SQLite file could not be written or read.
    public static let store = SyncErrorCode(name: "store")
    /// The row is not a valid row (no id where one is needed, a reserved name).
    public static let invalidRow = SyncErrorCode(name: "invalidRow")
    /// The task that ran the pull was cancelled; the pages committed before stay, whole.
    public static let cancelled = SyncErrorCode(name: "cancelled")

    /// A queue row holds a kind or a state this version does not know (a newer one wrote it):
    /// it is refused, never sent as something else. ``SyncContext/cancel(_:)`` drops it.
    public static let unknownOperation = SyncErrorCode(name: "unknownOperation")
    /// The file's sync tables are at a schema version newer than this library knows
    /// (``SyncContext/queueSchemaVersion``): the file is left as it is.
    public static let unsupportedSchema = SyncErrorCode(name: "unsupportedSchema")
    /// A lookup to settle an uncertain insert matched more than one server row.
    public static let ambiguousLookup = SyncErrorCode(name: "ambiguousLookup")

    /// (Internal: a pulled page met a local change inside its commit and is read again.)
    static let pageRace = SyncErrorCode(name: "pageRace")
    /// (Internal: a push's answer met a later local change inside its commit and is settled again.)
    static let laterChange = SyncErrorCode(name: "laterChange")

    public var description: String { name }
}

/// A failed offline operation. Nothing was changed: a local write and its queue entry are one
/// transaction.
public struct SyncError: Error, CustomStringConvertible {
    /// What went wrong.
    public var code: SyncErrorCode
    /// Says what, in words.
    public var message: String
    /// The table.
    public var table: String?
    /// The request's error, for ``SyncErrorCode/http``.
    public var tableError: TableError<JSONObject>?
    /// The push that failed before a pull, for ``SyncErrorCode/pushFailed``.
    public var push: PushResult?

    /// An error.
    public init(
        _ code: SyncErrorCode, _ message: String, table: String? = nil, tableError: TableError<JSONObject>? = nil,
        push: PushResult? = nil
    ) {
        self.code = code
        self.message = message
        self.table = table
        self.tableError = tableError
        self.push = push
    }

    public var description: String {
        (table.map { "table \($0): " } ?? "") + "\(code): \(message)"
    }
}
