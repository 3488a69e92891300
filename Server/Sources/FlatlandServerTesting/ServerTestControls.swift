import FlatlandServer

/// Test controls of one ``FlatlandServer/SampleServer``: request counters, injected failures,
/// slow and chunked bodies, held and dropped responses, and faults on the table routes (lost
/// answers, failures, cut bodies, delays). Each server has its own; nothing here is global.
///
/// These are for tests of clients, the way `HummingbirdTesting` serves tests of applications:
/// the server library itself has no public fault API.
///
/// ```swift
/// import FlatlandServer
/// import FlatlandServerTesting
///
/// let server = SampleServer()
/// let port = try await server.start()
/// server.testControls.injectTableFault(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
/// // the next POST /tables/todoitem… inserts its row, and its connection closes unanswered
/// ```
///
/// Paths are matched exactly, without the query (`/devices`).
public struct ServerTestControls: Sendable {
    let server: SampleServer

    /// Requests received for `method path` (`"GET", "/devices"`).
    public func requestCount(_ method: String = "GET", _ path: String) -> Int {
        server.knobs.requestCount(method, path)
    }

    /// Requests received in all.
    public var totalRequests: Int { server.knobs.totalRequests }

    /// The header fields (lower-case names) of the last request to `path`.
    public func lastHeaders(_ path: String) -> [String: String] { server.knobs.lastHeaders(path) }

    /// The next `times` requests to `path` fail with `status`, an error body and, if given, a
    /// `Retry-After` header; then requests succeed again.
    public func fail(_ path: String, times: Int, status: Int = 503, retryAfter: String? = nil) {
        server.knobs.fail(path, times: times, status: status, retryAfter: retryAfter)
    }

    /// Every response body is written in chunks of `size` bytes (chunked transfer encoding),
    /// with `pause` between chunks; nil writes bodies whole.
    public func chunkBodies(size: Int?, pause: Duration = .zero) { server.knobs.chunkBodies(size: size, pause: pause) }

    /// Responses to `path` stop after `afterBytes` bytes of body (0: before the status line)
    /// until ``release(_:)``.
    public func hold(_ path: String, afterBytes: Int = 0) { server.knobs.hold(path, afterBytes: afterBytes) }

    /// Lets held responses to `path` go on; later ones are no longer held.
    public func release(_ path: String) { server.knobs.release(path) }

    /// Lets every held response go on.
    public func releaseAll() { server.knobs.releaseAll() }

    /// The next response to `path` sends `afterBytes` bytes of its body, then the connection is
    /// closed (a dropped connection).
    public func dropConnection(_ path: String, afterBytes: Int) {
        server.knobs.dropConnection(path, afterBytes: afterBytes)
    }

    /// Requests to `path` get this status and body (bytes as given, valid JSON or not).
    public func respond(_ path: String, status: Int, body: [UInt8]) {
        server.knobs.respond(path, status: status, body: body)
    }

    /// Waits until `count` requests for `method path` have arrived (polling, at most about
    /// 10 s); throws ``ServerTestError`` when they never do.
    public func waitForRequests(_ method: String = "GET", _ path: String, count: Int) async throws {
        do {
            try await server.knobs.waitForRequests(method, path, count: count)
        } catch let error as KnobError {
            throw ServerTestError(message: error.message)
        }
    }

    /// Back to rest: no failures, holds (released), drops or overrides; counters kept.
    public func reset() { server.knobs.reset() }

    /// Queues `fault` for the next `times` table requests whose method is `method` (any when
    /// nil; case-insensitive) and whose path (without the query) starts with `pathPrefix`.
    /// A `times` of 0 or less queues nothing. Only table routes (`/tables…`) take faults.
    public func injectTableFault(
        _ fault: TableFault, method: String? = nil, pathPrefix: String = "/tables/", times: Int = 1
    ) {
        server.tableFaults.inject(fault.underlying, method: method, pathPrefix: pathPrefix, times: times)
    }

    /// How many table requests the queued faults will still match.
    public var pendingTableFaults: Int { server.tableFaults.pending }

    /// Drops every queued table fault.
    public func resetTableFaults() { server.tableFaults.reset() }
}

/// What happens to a table request a fault matches.
public enum TableFault: Sendable, Hashable {
    /// The request is served (a write commits) and then the connection is closed without any
    /// answer: not even a status line (a "lost response").
    case loseResponse
    /// The request is answered with `status` (e.g. 500, or 503 with `retryAfter` seconds in a
    /// `Retry-After` header) and a JSON error body, without touching the storage.
    case fail(status: Int, retryAfter: String? = nil)
    /// The request is served, and its answer (sent with a `Content-Length`) stops after
    /// `afterBytes` bytes of body (half the body when nil; at least one byte and never all of
    /// it) when the connection is closed.
    case dropMidBody(afterBytes: Int? = nil)
    /// The request is served after waiting `duration`.
    case delay(Duration)

    var underlying: InjectedTableFault {
        switch self {
        case .loseResponse: .loseResponse
        case .fail(let status, let retryAfter): .fail(status: status, retryAfter: retryAfter)
        case .dropMidBody(let afterBytes): .dropMidBody(afterBytes: afterBytes)
        case .delay(let duration): .delay(duration)
        }
    }
}

/// A test control's wait that did not end.
public struct ServerTestError: Error, CustomStringConvertible {
    /// What did not happen.
    public var message: String
    public var description: String { message }
}

extension SampleServer {
    /// This server's test controls. They are installed the first time they are asked for and
    /// see the requests that arrive from then on (a server no test touched has none).
    public var testControls: ServerTestControls {
        _ = knobs
        _ = tableFaults
        return ServerTestControls(server: self)
    }
}

extension ServerTestControls {
    /// Writes `rows` new rows into `table` through the storage, a thousand writes per
    /// transaction, as inserts would (each with its own `updatedAt` and `version`); `data(i)` is
    /// row `i`'s fields as a JSON object. Much faster than inserting through the protocol.
    public func seedTable(_ table: String, rows: Int, id: (Int) -> String, data: (Int) -> String) async throws {
        try await server.seedTable(table, rows: rows, id: id, data: data)
    }

    /// The live (not deleted) rows of `table`, counted by the storage.
    public func rowCount(_ table: String) async throws -> Int { try await server.rowCount(table) }

    /// Drops the PostgreSQL schema the tables live in, with everything in it (a schema made for
    /// one test or benchmark run); nothing for SQLite.
    public func dropTablesSchema() async throws { try await server.dropTablesSchema() }
}

extension SampleServer {
    /// This server's request controls, installed on first use (a server no test touched has
    /// none). Package-wide: the Server package's own tests use them directly.
    package var knobs: ServerKnobs { hooks.request { ServerKnobs(log: requestLog) } }

    /// The faults injected into this server's table routes, installed on first use.
    package var tableFaults: TableFaults { hooks.table { TableFaults() } }
}
