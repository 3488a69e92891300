import FlatlandHTTP
import FlatlandSync
import Foundation
import Testing

@Suite struct HeaderTests {
    private func sent(through filter: TableHeadersFilter, headers: HTTPHeaders = [:]) async throws -> HTTPHeaders {
        let request = HTTPRequest(
            method: .get, url: URL(string: "http://127.0.0.1/tables/todoitem")!, endpoint: "/tables/todoitem",
            headers: headers)
        let seen = SeenHeaders()
        _ = try await filter.handle(request) { request in
            seen.set(request.headers)
            return HTTPResponse(status: 200)
        }
        return seen.get()
    }

    final class SeenHeaders: @unchecked Sendable {
        private let lock = NSLock()
        private var headers: HTTPHeaders = [:]
        func set(_ h: HTTPHeaders) { lock.withLock { headers = h } }
        func get() -> HTTPHeaders { lock.withLock { headers } }
    }

    @Test func eachProtocolSendsItsOwnHeaders() async throws {
        let v1 = try await sent(through: TableHeadersFilter(protocol: .v1, appKey: "key", installationID: "inst"))
        #expect(v1["X-ZUMO-APPLICATION"] == "key")
        #expect(v1["ZUMO-API-VERSION"] == nil)
        #expect(v1["X-ZUMO-INSTALLATION-ID"] == "inst")
        #expect(v1["X-ZUMO-VERSION"]?.hasPrefix("ZUMO/2.0 (lang=Swift;") == true)

        let v2 = try await sent(through: TableHeadersFilter(protocol: .v2, installationID: "inst", authToken: "tok"))
        #expect(v2["ZUMO-API-VERSION"] == "2.0.0")
        #expect(v2["X-ZUMO-APPLICATION"] == nil)
        #expect(v2["X-ZUMO-AUTH"] == "tok")
        #expect(v2["X-ZUMO-INSTALLATION-ID"] == "inst")

        let v3 = try await sent(through: TableHeadersFilter(protocol: .v3, installationID: "inst"))
        #expect(v3["ZUMO-API-VERSION"] == "3.0.0")
        #expect(v3["X-ZUMO-VERSION"] == nil)
        #expect(v3["X-ZUMO-INSTALLATION-ID"] == nil)
    }

    @Test func aHeaderAlreadySetIsKept() async throws {
        let headers = try await sent(
            through: TableHeadersFilter(protocol: .v2), headers: ["ZUMO-API-VERSION": "2.0.1"])
        #expect(headers["ZUMO-API-VERSION"] == "2.0.1")
    }

    @Test func versionsAreQuotedWithTheirInnerQuotesEscapedAndReadBack() {
        #expect(TableVersionHeader.quoted("AAAAAAAAB9E=") == "\"AAAAAAAAB9E=\"")
        #expect(TableVersionHeader.quoted("a\"b") == "\"a\\\"b\"")
        for version in ["AAAAAAAAB9E=", "a\"b", "", "W/x"] {
            #expect(TableVersionHeader.version(fromETag: TableVersionHeader.quoted(version)) == version)
        }
        #expect(TableVersionHeader.version(fromETag: "W/\"abc\"") == "abc")
        #expect(TableVersionHeader.version(fromETag: "abc") == "abc")
    }

    @Test func installationIDsAreStableTextAndDistinct() {
        let a = InstallationID.make()
        #expect(a == a.lowercased())
        #expect(UUID(uuidString: a) != nil)
        #expect(a != InstallationID.make())
    }
}
