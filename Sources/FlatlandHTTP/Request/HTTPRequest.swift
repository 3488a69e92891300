import Flatland
import Foundation

/// One request as it goes through the filters to the transport.
///
/// Filters receive it as a value, may change any part of it (a header, the URL, the body) and
/// pass it on.
public struct HTTPRequest: Sendable, CustomStringConvertible {
    /// The method.
    public var method: HTTPMethod
    /// The absolute URL.
    public var url: URL
    /// The path and query as launched, relative to the environment's base URL: the endpoint
    /// whose collection the response updates.
    public var endpoint: String
    /// The header fields: the environment's defaults, then the launch's own, then the filters'.
    public var headers: HTTPHeaders
    /// The body, if any.
    public var body: [UInt8]?
    /// The uuid of the task this request belongs to.
    public var taskID: String
    /// Which attempt this is, from 1 (retries count up).
    public var attempt: Int
    /// The longest wait for the server between two bytes, in seconds.
    public var timeout: TimeInterval
    /// How a successful response's body is ingested; nil for the backend's
    /// ``Backend/Configuration/ingestOptions``. A table client gives its own (its rows' identity
    /// rule and envelope).
    public var ingestOptions: IngestOptions?
    /// What else the commit of a successful response's body does, decided once the body is
    /// read and before it is written: ids to remove and work to run in the same transaction (a
    /// sync push drops the operation it sent; a pull saves its delta token with the page). Nil
    /// commits the body alone. Not called for a response without a body.
    public var commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)?
    /// How a successful response's body is consumed: streamed into the store (the default), or
    /// read whole as bytes or JSON and handed back in the result without touching the store.
    public var consumption: ResponseConsumption = .ingest

    /// A request; the backend builds these from ``Backend/launch(_:_:body:headers:ingestOptions:commitPlan:)``.
    public init(
        method: HTTPMethod, url: URL, endpoint: String, headers: HTTPHeaders = [:], body: [UInt8]? = nil,
        taskID: String = "", attempt: Int = 1, timeout: TimeInterval = 60, ingestOptions: IngestOptions? = nil
    ) {
        self.method = method
        self.url = url
        self.endpoint = endpoint
        self.headers = headers
        self.body = body
        self.taskID = taskID
        self.attempt = attempt
        self.timeout = timeout
        self.ingestOptions = ingestOptions
    }

    public var description: String { "\(method) \(url.absoluteString)" }
}

/// The status line and headers of a response.
public struct HTTPResponseHead: Sendable, Hashable {
    /// The status code.
    public var status: Int
    /// The header fields.
    public var headers: HTTPHeaders

    /// A head.
    public init(status: Int, headers: HTTPHeaders = [:]) {
        self.status = status
        self.headers = headers
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// What a response's commit does besides writing its body (``HTTPRequest/commitPlan``).
public struct ResponseCommit: Sendable {
    /// Ids removed from the store in the same commit.
    public var removing: [String]
    /// Work run in the same persistence transaction (FlatlandSQLite's `SQLiteTransactionWork`).
    public var alongside: (any StoreTransactionWork)?

    /// Whether the body is read and checked to its end but not written: the batch is handed
    /// back in ``HTTPResult/uncommitted`` for the caller to commit (`Store.commit(_:removing:alongside:)`)
    /// or drop. A sync pull commits one page while the next one downloads.
    public var handsBack: Bool

    /// A plan; nothing besides the body by default.
    public init(removing: [String] = [], alongside: (any StoreTransactionWork)? = nil) {
        self.removing = removing
        self.alongside = alongside
        handsBack = false
    }

    /// The plan that writes nothing and hands the batch back (``handsBack``).
    public static var handBack: ResponseCommit {
        var plan = ResponseCommit()
        plan.handsBack = true
        return plan
    }
}
