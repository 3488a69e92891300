import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSync
import Foundation
import Testing

/// Next links in every form a legal server writes them: a v3 `nextLink` as a query string (as
/// the Datasync servers write it), an absolute URL or an absolute path, and a v2 `Link` header.
@Suite("Next links: query strings, URLs, paths and Link headers")
struct PullLinkTests {
    static let forms: [LegalServer.Behaviour.Link] = [.queryString, .absoluteURL, .absolutePath]

    /// A v3 pull follows the server's `nextLink` in each form to the last row (the server caps
    /// its pages at 20, below the pull's `$top`).
    @Test(arguments: forms)
    func aV3PullFollowsEveryFormOfNextLink(form: LegalServer.Behaviour.Link) async throws {
        let server = LegalServer(.init(protocol: .v3, pageCap: 20, link: form))
        server.insert(count: 130)
        try await withLegalDevice(server) { device in
            let pulled = try await device.table.pull(queryID: "all")
            #expect(device.matchesServer(), "missing: \(device.missing().prefix(5))")
            #expect(pulled.rows >= 130)
            // Every page after the first was read from the link, on the request's own path.
            #expect(server.requests.dropFirst().allSatisfy { $0.hasPrefix("/api/tables/things?") })
            #expect(server.requests.contains { $0.contains("$skip=20") })
        }
    }

    /// An online query follows each form too, v3 in the body and v2 in the `Link` header.
    @Test(arguments: [TableProtocol.v2, .v3], forms)
    func aQueryFollowsEveryFormOfLink(version: TableProtocol, form: LegalServer.Behaviour.Link) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version, pageCap: 20, link: form)
        behaviour.pageSize = 20
        let server = LegalServer(behaviour)
        server.insert(count: 70)
        var configuration = Backend.Configuration(makeTransport: { server })
        configuration.addTableHeaders(protocol: version)
        let session = Session(user: "u", environment: try LegalServer.environment, configuration: configuration)
        let rows = try await UntypedTable("things", session: session, options: TableOptions(protocol: version))
            .query(TableQuery(orderBy: [.ascending("id")]))
        #expect(rows.compactMap { $0.text("id") } == (0..<70).map { String(format: "r%04d", $0) })
        #expect(server.requests.count == 4)
        #expect(server.requests.dropFirst().allSatisfy { $0.hasPrefix("/api/tables/things?") })
        await session.close()
    }

    /// A query-string link is resolved against the path of the request that carried it, its
    /// `?` optional; bytes a URL cannot carry are encoded, escapes kept.
    @Test func aQueryStringLinkKeepsTheRequestsPath() async throws {
        let behaviour = LegalServer.Behaviour(protocol: .v3, pageCap: 10, link: .queryString)
        let server = LegalServer(behaviour)
        server.insert(count: 15)
        try await withLegalDevice(server) { device in
            _ = try await device.table.pull()
            #expect(device.local().count == 15)
            let second = try #require(server.requests.dropFirst().first)
            #expect(second.hasPrefix("/api/tables/things?"))
            #expect(second.contains("$skip=10"))
        }
    }
}
