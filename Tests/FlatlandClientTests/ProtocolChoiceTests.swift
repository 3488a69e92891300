import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandSync
import Foundation
import Testing

/// A table's protocol is chosen once, on the session or in the table's options: headers, verbs
/// and query style follow from that one choice, and two different choices are refused before
/// anything is sent.
@Suite struct ProtocolChoiceTests {
    static let row = #"{"id":"r1","text":"a","updatedAt":"2026-01-02T03:04:05.678Z","version":"AQ==","deleted":false}"#

    func session(_ transport: StubTransport, headers version: TableProtocol?) throws -> Session {
        var configuration = Backend.Configuration(makeTransport: { transport })
        if let version { configuration.addTableHeaders(protocol: version) }
        let environment = try Environment(name: "stub", baseURL: URL(string: "https://example.invalid")!)
        return Session(user: "ada", environment: environment, configuration: configuration)
    }

    /// The bug: with only the session's v3 headers a table spoke v2 (a PATCH, v2's query) to
    /// a v3 server.
    @Test func aTableSpeaksItsSessionsProtocol() async throws {
        let transport = StubTransport { request in
            guard request.method == .get else { return .init(200, Self.row) }
            // One row in all: the first page has it, a page after it is empty.
            let first = !request.endpoint.contains("$skip=")
            return .init(200, #"{"items":[\#(first ? Self.row : "")],"count":1}"#)
        }
        let todos = UntypedTable("todoitem", session: try session(transport, headers: .v3))
        _ = try await todos.update(["id": "r1", "text": "b", "version": "AQ=="])
        _ = try await todos.query(TableQuery(top: 5, includeTotalCount: true))

        let (update, list) = (transport.sent[0], transport.sent[1])
        #expect(update.method == .put)
        #expect(update.headers["ZUMO-API-VERSION"] == "3.0.0")
        #expect(list.url.absoluteString.contains("$count=true"))
        #expect(!list.url.absoluteString.contains("$inlinecount"))
        #expect(todos.options.protocolVersion == .v3)
    }

    /// With the protocol named only in the table's options, its requests carry that protocol's
    /// version header (no session filter sets it).
    @Test(arguments: [TableProtocol.v2, .v3])
    func aTableSendsItsOwnProtocolsHeader(_ version: TableProtocol) async throws {
        let transport = StubTransport { _ in .init(200, Self.row) }
        let todos = UntypedTable(
            "todoitem", session: try session(transport, headers: nil), options: TableOptions(protocol: version))
        _ = try await todos.update(["id": "r1", "text": "b", "version": "AQ=="])

        let update = try #require(transport.sent.first)
        #expect(update.headers["ZUMO-API-VERSION"] == version.apiVersion)
        #expect(update.method == (version == .v3 ? .put : .patch))
    }

    @Test func aTableOnASessionWithNoProtocolSpeaksV2() async throws {
        let transport = StubTransport { _ in .init(200, Self.row) }
        let todos = UntypedTable("todoitem", session: try session(transport, headers: nil))
        _ = try await todos.update(["id": "r1", "text": "b", "version": "AQ=="])
        #expect(transport.sent.first?.method == .patch)
        #expect(transport.sent.first?.headers["ZUMO-API-VERSION"] == "2.0.0")
        #expect(todos.options.protocolVersion == .v2)
    }

    @Test func twoDifferentChoicesAreRefusedBeforeAnythingIsSent() async throws {
        let transport = StubTransport { _ in .init(200, Self.row) }
        let session = try session(transport, headers: .v3)
        let todos = UntypedTable("todoitem", session: session, options: TableOptions(protocol: .v2))
        let error = await #expect(throws: TableError<JSONObject>.self) {
            _ = try await todos.insert(["id": "r1", "text": "a"])
        }
        #expect(error?.code == .protocolMismatch)
        #expect(error?.message.contains("v2") == true && error?.message.contains("v3") == true)
        #expect(transport.sent.isEmpty)
        // The same table with the session's protocol, or none named, goes through.
        _ = try await UntypedTable("todoitem", session: session, options: TableOptions(protocol: .v3))
            .insert(["id": "r1", "text": "a"])
        #expect(transport.sent.count == 1)
    }

    @Test func aSyncContextRefusesTwoDifferentChoices() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-protocol-\(UUID())")
            .path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Backend.Configuration(makeTransport: { StubTransport([]) })
        configuration.addTableHeaders(protocol: .v3)
        let session = try Session(
            user: "ada", environment: try Environment(name: "stub", baseURL: URL(string: "https://example.invalid")!),
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        let error = #expect(throws: SyncError.self) {
            try SyncContext(session: session, options: TableOptions(protocol: .v1))
        }
        #expect(error?.code == .protocolMismatch)
        #expect(error?.tableError?.code == .protocolMismatch)
        _ = try SyncContext(session: session)
    }
}
