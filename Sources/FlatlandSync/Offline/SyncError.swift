import FlatlandJSON

/// What went wrong in an offline operation (``SyncError/code``).
public struct SyncErrorCode: Hashable, Sendable, CustomStringConvertible {
    let name: String

    /// The session does not keep its store in SQLite: the queue needs the same file.
    public static let notPersistent = SyncErrorCode(name: "notPersistent")
    /// The context's ``TableOptions`` name another protocol than its session's table headers
    /// (``TableErrorCode/protocolMismatch``, in ``SyncError/tableError``).
    public static let protocolMismatch = SyncErrorCode(name: "protocolMismatch")
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
    /// The server's paging went nowhere: a request from the pull's key brought no row after
    /// it, a next link brought no row the pull had not read, or a next link named a page the
    /// pull had asked for already. The pull stops rather than loop; the pages committed before
    /// stay, whole.
    public static let noProgress = SyncErrorCode(name: "noProgress")
    /// A request took longer than its deadline (``PullOptions/requestDeadline``) and was cut.
    public static let deadline = SyncErrorCode(name: "deadline")
    /// The server answered with something the protocol does not allow there: a `200` whose
    /// body is not a page of rows, a row without an `updatedAt` the pull can read.
    public static let invalidResponse = SyncErrorCode(name: "invalidResponse")

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
