import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import FlatlandSync
import Foundation
import Synchronization
import Testing

/// A typed row of the default `todoitem` table.
struct TodoItem: TableEntity {
    static let prefix = "todo"
    var id: EntityID<TodoItem>
    var text = ""
    var complete = false
    var system = TableSystemProperties()
    init(id: EntityID<TodoItem>) { self.id = id }
    static let fields: [Field<TodoItem>] = [Field("text", \.text), Field("complete", \.complete)] + systemFields
}

/// The requests a session sent, as its last filter saw them (after every other filter).
final class RequestLog: Sendable {
    private let entries = Mutex<[HTTPRequest]>([])
    var requests: [HTTPRequest] { entries.withLock { $0 } }
    var last: HTTPRequest? { requests.last }

    var filter: ClosureFilter {
        ClosureFilter { request, next in
            self.entries.withLock { $0.append(request) }
            return try await next(request)
        }
    }
}

/// Runs `body` against the sample server's tables (every protocol served) on a loopback port.
func withTableServer<R>(
    _ serving: TableServing = TableServing(protocols: [.v1, .v2, .v3]),
    _ body: (Int) async throws -> R
) async throws -> R {
    try await withSyncServer(serving) { _, port in try await body(port) }
}

/// The same, with the server itself for its fault knobs.
func withSyncServer<R>(
    _ serving: TableServing = TableServing(protocols: [.v1, .v2, .v3]),
    _ body: (SampleServer, Int) async throws -> R
) async throws -> R {
    let server = SampleServer(configuration: .init(population: .init(users: 1, sessions: 1), tables: serving))
    let port = try await server.start()
    do {
        let result = try await body(server, port)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// A session on the server at `port` speaking `version`, with its requests logged.
func tableSession(
    port: Int, protocol version: TableProtocol, appKey: String? = nil, log: RequestLog = RequestLog(),
    makeTransport: (@Sendable () -> any HTTPTransport)? = nil
) throws -> Session {
    let environment = try Environment(
        name: "tables", baseURL: URL(string: "http://127.0.0.1:\(port)")!, allowInsecureHTTP: true)
    var configuration = Backend.Configuration()
    if let makeTransport { configuration.makeTransport = makeTransport }
    configuration.addTableHeaders(protocol: version, appKey: appKey, installationID: "install-1")
    configuration.filters.append(log.filter)
    return Session(
        user: "tester", environment: environment, registry: try EntityRegistry([TodoItem.self]),
        configuration: configuration)
}

/// The options of a table speaking `version`; v1 asks for every system property.
func tableOptions(_ version: TableProtocol) -> TableOptions {
    TableOptions(protocol: version, systemProperties: version == .v1 ? .all : nil)
}

extension JSONObject {
    /// A member as text, for short expectations.
    func text(_ key: String) -> String? {
        if case .string(let s)? = self[key] { return s }
        return nil
    }
}
