import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import FlatlandSync
import Foundation
import Testing

/// Bugs of the library found by its first user, `flatland table`, each with the test that
/// showed it (against the embedded table server on loopback).
@Suite("FlatlandSync: found by the table command line")
struct TableCLIFoundTests {
    /// Runs `body` with an untyped `todoitem` table of `version` on a fresh embedded server.
    func withTable(_ version: TableProtocol, _ body: (UntypedTable) async throws -> Void) async throws {
        let server = SampleServer(
            configuration: .init(population: .init(users: 0), tables: TableServing(protocols: [.v1, .v2, .v3])))
        let port = try await server.start()
        do {
            let environment = try Environment(name: "local", baseURL: URL(string: "http://127.0.0.1:\(port)")!)
            var configuration = Backend.Configuration()
            configuration.addTableHeaders(protocol: version)
            let session = Session(user: "found", environment: environment, configuration: configuration)
            let options = TableOptions(protocol: version, systemProperties: version == .v1 ? .all : nil)
            try await body(UntypedTable("todoitem", session: session, options: options))
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    @Test("a query's pages hold their rows in every protocol", arguments: TableProtocol.allCases)
    func queryPagesHoldTheirRows(_ version: TableProtocol) async throws {
        try await withTable(version) { table in
            for n in 0..<3 { _ = try await table.insert(["id": .string("q\(n)"), "n": .number(JSONNumber(n))]) }
            let owner: JSONValue = .object(["id": "o-1", "name": "Ada"])
            _ = try await table.insert(["id": "q3", "n": 3, "owner": owner])
            let rows = try await table.query(TableQuery(orderBy: [.ascending("n")]))
            #expect(rows.compactMap { $0["id"]?.stringValue } == ["q0", "q1", "q2", "q3"])
            // An object with an id inside a row stays the row's field, not a row of its own.
            #expect(rows.last?["owner"] == owner)
            #expect(table.stored("o-1") == nil)
            // With the count asked for, v1 and v2 answer {"results":[…],"count":N} too.
            let counted = try await table.query(TableQuery(orderBy: [.ascending("n")], includeTotalCount: true))
            #expect(counted == rows)
        }
    }
}
