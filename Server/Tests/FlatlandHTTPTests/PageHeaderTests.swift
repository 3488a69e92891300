import Flatland
import FlatlandHTTP
import Foundation
import Testing

/// A transport that answers every request with one canned response.
final class CannedTransport: HTTPTransport, @unchecked Sendable {
    let head: HTTPResponseHead
    let body: [UInt8]

    init(status: Int = 200, headers: HTTPHeaders, body: String) {
        head = HTTPResponseHead(status: status, headers: headers)
        self.body = Array(body.utf8)
    }

    func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead {
        try receiver.receive(head: head)
        // Two chunks, so the body streams as a network's would.
        let cut = body.count / 2
        try body[..<cut].withUnsafeBytes { try receiver.receive(chunk: $0) }
        try body[cut...].withUnsafeBytes { try receiver.receive(chunk: $0) }
        return head
    }

    func shutdown() {}
}

@Suite("A page's place from its response headers")
struct PageHeaderTests {
    private func session(_ transport: CannedTransport, options: IngestOptions) throws -> Session {
        let environment = try Environment(name: "canned", baseURL: URL(string: "http://127.0.0.1:1")!)
        return Session(
            user: "ada", environment: environment,
            configuration: Backend.Configuration(makeTransport: { transport }, ingestOptions: options))
    }

    @Test func aBareArrayTakesItsNextLinkAndTotalFromTheHeaders() async throws {
        let transport = CannedTransport(
            headers: [
                "Link": #"<http://127.0.0.1:1/tables/todoitem?$skip=2>; rel="next", <http://x/first>; rel=first"#,
                "X-Total-Count": "5",
            ],
            body: #"[{"uuid":"u-1"},{"uuid":"u-2"}]"#)
        let session = try session(transport, options: IngestOptions(envelope: .bareArray))
        let result = try await session.launch(.get, "/tables/todoitem?$skip=0").value
        #expect(result.ingest?.page?.nextLink == "http://127.0.0.1:1/tables/todoitem?$skip=2")
        #expect(result.endpointCollection?.total == 5)
        #expect(result.endpointCollection?.items == ["u-1", "u-2"])
        await session.logout()
    }

    @Test func theCallersOwnContextWins() async throws {
        let transport = CannedTransport(
            headers: ["Link": "<http://127.0.0.1:1/next>; rel=next", "X-Total-Count": "9"],
            body: #"[{"uuid":"u-1"}]"#)
        var options = IngestOptions(envelope: .bareArray)
        options.page = IngestOptions.PageContext(total: 3, nextLink: "http://127.0.0.1:1/mine")
        let session = try session(transport, options: options)
        let result = try await session.launch(.get, "/items").value
        #expect(result.ingest?.page?.nextLink == "http://127.0.0.1:1/mine")
        #expect(result.endpointCollection?.total == 3)
        await session.logout()
    }

    @Test(arguments: [
        (#"<http://a/2>; rel="next""#, "http://a/2"),
        ("<http://a/2>;rel=next", "http://a/2"),
        (#"<http://a/1>; rel="prev", <http://a/3>; rel="next""#, "http://a/3"),
        (#"<http://a/3>; rel="last next""#, "http://a/3"),
        (#"<http://a/1>; rel="prev""#, nil),
        ("garbage", nil),
        ("<http://a/unclosed; rel=next", nil),
    ])
    func linkHeadersAreReadAsRFC8288Says(header: String, expected: String?) async throws {
        let transport = CannedTransport(headers: ["Link": header], body: #"[{"uuid":"u-1"}]"#)
        let session = try session(transport, options: IngestOptions(envelope: .bareArray))
        let result = try await session.launch(.get, "/items").value
        #expect(result.ingest?.page?.nextLink == expected)
        await session.logout()
    }
}
