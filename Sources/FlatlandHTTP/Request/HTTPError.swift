import Flatland
import FlatlandJSON

/// Why a task failed: what, and for which task, endpoint and status.
///
/// ```swift
/// do {
///     try await session.launch(.get, "/users/u-unknown").value
/// } catch let error as HTTPError where error.code == .status {
///     print(error.status!, error.bodyText)  // 404 {"error":{…}}
/// }
/// ```
public struct HTTPError: Error, CustomStringConvertible {
    /// What kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The request never got a whole response: no connection, a timeout, a connection
        /// dropped in the middle of the body. ``HTTPError/underlying`` says what.
        public static let transport = Code(name: "transport")
        /// The task was cancelled.
        public static let cancelled = Code(name: "cancelled")
        /// The server answered with a status other than 2xx; ``HTTPError/body`` holds its error
        /// body.
        public static let status = Code(name: "status")
        /// The body is not valid JSON, or an entity could not be decoded:
        /// ``HTTPError/ingest`` gives the position (byte offset, line, column, JSON path).
        public static let decoding = Code(name: "decoding")
        /// A plain `http://` URL that is not a loopback address, without the explicit opt-in.
        public static let insecure = Code(name: "insecure")
        /// The request could not be built (a path that does not form a URL).
        public static let invalidRequest = Code(name: "invalidRequest")
        /// An absolute URL outside the session's environment: another scheme, host or port, or
        /// a path outside its base URL's. Nothing was sent (a session's token goes only to its
        /// own server).
        public static let outsideEnvironment = Code(name: "outsideEnvironment")
        /// The session has ended (logged out).
        public static let sessionEnded = Code(name: "sessionEnded")
        /// The response was read whole, but the store could not commit it: its persistence
        /// failed. ``HTTPError/persistenceError`` is the persistence's own error (FlatlandSQLite's
        /// `SQLiteStoreError`), ``HTTPError/ingest`` the ingest's. The store is unchanged.
        public static let persistence = Code(name: "persistence")
        public var description: String { name }
    }

    /// What kind of failure.
    public var code: Code
    /// A sentence for people.
    public var message: String
    /// The uuid of the task.
    public var taskID: String?
    /// The method of the request.
    public var method: HTTPMethod?
    /// The endpoint (path and query) as launched.
    public var endpoint: String?
    /// The status code, for ``Code-swift.struct/status`` (and any response that arrived).
    public var status: Int?
    /// The server's error body, for ``Code-swift.struct/status`` (at most 64 KiB).
    public var body: [UInt8]
    /// The ingest's error, with its position, for ``Code-swift.struct/decoding``.
    public var ingest: IngestError?
    /// The transport's own description of a failure.
    public var underlying: String?

    /// An error.
    public init(
        _ code: Code, _ message: String, taskID: String? = nil, method: HTTPMethod? = nil, endpoint: String? = nil,
        status: Int? = nil, body: [UInt8] = [], ingest: IngestError? = nil, underlying: String? = nil
    ) {
        self.code = code
        self.message = message
        self.taskID = taskID
        self.method = method
        self.endpoint = endpoint
        self.status = status
        self.body = body
        self.ingest = ingest
        self.underlying = underlying
    }

    /// An error for a failed ingest: ``Code-swift.struct/cancelled``,
    /// ``Code-swift.struct/persistence`` or ``Code-swift.struct/decoding`` as the ingest's code says.
    init(ingest error: IngestError, status: Int? = nil) {
        let code: Code =
            switch error.code {
            case .cancelled: .cancelled
            case .persistence: .persistence
            default: .decoding
            }
        let message =
            code == .persistence
            ? "the response could not be stored: \(error)" : "the response could not be read: \(error)"
        self.init(code, message, status: status, ingest: error)
    }

    /// The persistence's own error, for ``Code-swift.struct/persistence`` (FlatlandSQLite's
    /// `SQLiteStoreError`).
    public var persistenceError: (any Error & Sendable)? { code == .persistence ? ingest?.underlying : nil }

    /// The error body as text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The error body as JSON, when it is JSON.
    public var bodyJSON: JSONValue? { body.isEmpty ? nil : try? JSONValue(parsing: body) }

    public var description: String {
        var text = "\(code)"
        if let method, let endpoint { text += " \(method) \(endpoint)" }
        if let status { text += " → \(status)" }
        if let taskID { text += " [task \(taskID)]" }
        text += ": \(message)"
        if !body.isEmpty { text += " — " + String(bodyText.prefix(200)) }
        return text
    }

    /// The same error, stamped with the task it belongs to.
    func stamped(_ request: HTTPRequest) -> HTTPError {
        var copy = self
        copy.taskID = copy.taskID ?? request.taskID
        copy.method = copy.method ?? request.method
        copy.endpoint = copy.endpoint ?? request.endpoint
        return copy
    }
}
