import Flatland
import FlatlandHTTP
import FlatlandJSON

/// What went wrong in a table operation (``TableError/code``).
public struct TableErrorCode: Hashable, Sendable, CustomStringConvertible {
    let name: String

    /// 412: the row changed on the server since the version the request carried in `If-Match`.
    /// ``TableError/serverItem`` is the server's current row.
    public static let preconditionFailed = TableErrorCode(name: "preconditionFailed")
    /// 409: an insert of an id that exists, or a write the server found stale without
    /// `If-Match`. ``TableError/serverItem`` is the row the server sent.
    public static let conflict = TableErrorCode(name: "conflict")
    /// 404: no such row (or no such table). ``TableError/body`` keeps the server's answer
    /// (`{"error":"The item does not exist"}`).
    public static let notFound = TableErrorCode(name: "notFound")
    /// 410: the row is soft-deleted (Datasync v3).
    public static let gone = TableErrorCode(name: "gone")
    /// Any other failure of the request: ``TableError/httpError`` says what (a status, the
    /// transport, a cancel, a response that did not parse).
    public static let http = TableErrorCode(name: "http")
    /// The request was refused before it was sent: a bad query, a body with a name the protocol
    /// reserves, an operation the protocol does not have.
    public static let invalidRequest = TableErrorCode(name: "invalidRequest")
    /// The server answered with success but not with a row of this table.
    public static let invalidResponse = TableErrorCode(name: "invalidResponse")
    /// The table's ``TableOptions`` name another protocol than its session's table headers
    /// (`Backend.Configuration.addTableHeaders(protocol:)`): nothing was sent. Name the protocol
    /// in one place.
    public static let protocolMismatch = TableErrorCode(name: "protocolMismatch")

    public var description: String { name }
}

/// A failed table operation, with the server's row when the server sent one.
///
/// `Item` is the table's row type: the typed entity for a ``Table``, a `JSONObject` for an
/// ``UntypedTable``. The server's row in a 412 or 409 is decoded into it but not written to the
/// store; ``Table/adopt(_:)`` writes it when the caller chooses so.
///
/// ```swift
/// do {
///     _ = try await todos.update(stale)
/// } catch let error as TableError<TodoItem> where error.code == .preconditionFailed {
///     let current = error.serverItem  // the server's row, as a TodoItem
/// }
/// ```
public struct TableError<Item: Sendable>: Error, CustomStringConvertible {
    /// What went wrong.
    public var code: TableErrorCode
    /// Says what, in words.
    public var message: String
    /// The table.
    public var table: String
    /// The HTTP status, when the server answered.
    public var status: Int?
    /// The server's row in a 412 or 409 answer, decoded as the table's row type.
    public var serverItem: Item?
    /// The same row as JSON, as the server sent it.
    public var serverItemJSON: JSONObject?
    /// The response body (up to 64 KiB) of a failed request.
    public var body: [UInt8]
    /// The HTTP error underneath, when the request failed at the HTTP layer.
    public var httpError: HTTPError?

    /// An error; the table operations make these.
    public init(
        code: TableErrorCode, message: String, table: String, status: Int? = nil, serverItem: Item? = nil,
        serverItemJSON: JSONObject? = nil, body: [UInt8] = [], httpError: HTTPError? = nil
    ) {
        self.code = code
        self.message = message
        self.table = table
        self.status = status
        self.serverItem = serverItem
        self.serverItemJSON = serverItemJSON
        self.body = body
        self.httpError = httpError
    }

    /// The uuid of the HTTP task that failed, if one was sent.
    public var taskID: String? { httpError?.taskID }

    /// The body as text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    public var description: String {
        var text = "table \(table): \(code): \(message)"
        if let status { text += " (status \(status))" }
        return text
    }

    /// The same failure for another row type, with the server's row decoded by `convert`.
    func mapItem<Other: Sendable>(_ convert: (JSONObject) -> Other?) -> TableError<Other> {
        TableError<Other>(
            code: code, message: message, table: table, status: status, serverItem: serverItemJSON.flatMap(convert),
            serverItemJSON: serverItemJSON, body: body, httpError: httpError)
    }
}
