import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSync
import Foundation
import Synchronization
import Testing

/// A transport that answers from a function of the request, and remembers the URLs asked for.
final class StubTransport: HTTPTransport {
    let answer: @Sendable (URL) -> (status: Int, headers: HTTPHeaders, body: String)
    private let seen = Mutex<[String]>([])
    var urls: [String] { seen.withLock { $0 } }

    init(_ answer: @escaping @Sendable (URL) -> (status: Int, headers: HTTPHeaders, body: String)) {
        self.answer = answer
    }

    func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead {
        seen.withLock { $0.append(request.url.absoluteString) }
        let (status, headers, body) = answer(request.url)
        let head = HTTPResponseHead(status: status, headers: headers)
        try receiver.receive(head: head)
        var bytes = Array(body.utf8)
        try bytes.withUnsafeMutableBytes { try receiver.receive(chunk: UnsafeRawBufferPointer($0)) }
        return head
    }

    func shutdown() {}
}

/// How a query walks through pages: next links, `$skip`, and servers that misbehave.
@Suite struct TablePagingTests {
    /// Rows `from..<to` of a table as a bare JSON array.
    static func rows(_ range: Range<Int>) -> String {
        "[" + range.map { #"{"id":"r\#($0)","text":"row \#($0)"}"# }.joined(separator: ",") + "]"
    }

    static func parameter(_ name: String, of url: URL) -> Int? {
        URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == name }
            .flatMap { Int($0.value ?? "") }
    }

    static func skip(of url: URL) -> Int { parameter("$skip", of: url) ?? 0 }

    func session(_ transport: StubTransport) throws -> Session {
        let environment = try Environment(name: "stub", baseURL: URL(string: "http://127.0.0.1:9/api")!)
        return Session(
            user: "u", environment: environment, configuration: Backend.Configuration(makeTransport: { transport }))
    }

    @Test func withoutLinksTheQueryGoesOnWithSkipUntilAShortPage() async throws {
        // A server that pages by 40 and never sends a link.
        let transport = StubTransport { url in
            let skip = TablePagingTests.skip(of: url)
            return (200, [:], TablePagingTests.rows(skip..<min(skip + 40, 100)))
        }
        let session = try session(transport)
        let table = UntypedTable("things", session: session)
        let rows = try await table.query(TableQuery(filter: .field("text") != "x"))
        #expect(rows.map { $0.text("id") } == (0..<100).map { "r\($0)" })
        #expect(transport.urls.count == 3)
        #expect(transport.urls.map { TablePagingTests.skip(of: URL(string: $0)!) } == [0, 40, 80])
        // Every page in the query's endpoint collection, at its place (the first page too,
        // whose request has no $skip).
        let collection = try #require(table.collection(TableQuery(filter: .field("text") != "x")))
        #expect(collection.items == (0..<100).map { Optional("things-r\($0)") })
        #expect(transport.urls.allSatisfy { $0.hasPrefix("http://127.0.0.1:9/api/tables/things?$filter=") })
        await session.close()
    }

    @Test func aTopIsACapOverSeveralPages() async throws {
        let transport = StubTransport { url in
            let skip = TablePagingTests.skip(of: url)
            let top = TablePagingTests.parameter("$top", of: url) ?? 40
            return (200, [:], TablePagingTests.rows(skip..<skip + min(40, top)))
        }
        let session = try session(transport)
        let rows = try await UntypedTable("things", session: session).query(TableQuery(skip: 5, top: 90))
        #expect(rows.count == 90)
        #expect(rows.first?.text("id") == "r5" && rows.last?.text("id") == "r94")
        #expect(transport.urls.last?.contains("$skip=85&$top=10") == true)
        await session.close()
    }

    @Test func nextLinksOnTheSameServerAreFollowedUnderTheBasePath() async throws {
        let transport = StubTransport { url in
            let skip = TablePagingTests.skip(of: url)
            let next = skip + 10 < 25 ? "http://127.0.0.1:9/api/tables/things?$skip=\(skip + 10)" : nil
            let body =
                #"{"items":"# + TablePagingTests.rows(skip..<min(skip + 10, 25)) + #","count":25,"nextLink":"#
                + (next.map { "\"\($0)\"" } ?? "null") + "}"
            return (200, [:], body)
        }
        let session = try session(transport)
        let table = UntypedTable("things", session: session, options: TableOptions(protocol: .v3))
        let rows = try await table.query(TableQuery(includeTotalCount: true))
        #expect(rows.count == 25)
        #expect(transport.urls.count == 3)
        #expect(transport.urls[1] == "http://127.0.0.1:9/api/tables/things?$skip=10")
        await session.close()
    }

    @Test func aLinkHeaderIsFollowedAndEndsThePagingBySkip() async throws {
        let transport = StubTransport { url in
            let skip = TablePagingTests.skip(of: url)
            var headers: HTTPHeaders = [:]
            if skip == 0 { headers["Link"] = "</api/tables/things?$skip=50>; rel=next" }
            return (200, headers, TablePagingTests.rows(skip..<min(skip + 50, 60)))
        }
        let session = try session(transport)
        let rows = try await UntypedTable("things", session: session).query()
        #expect(rows.count == 60)
        #expect(transport.urls.count == 2)
        await session.close()
    }

    @Test func aNextLinkToAnotherServerIsRefused() async throws {
        let transport = StubTransport { _ in
            (200, ["Link": "<http://elsewhere.example/tables/things?$skip=2>; rel=next"], TablePagingTests.rows(0..<2))
        }
        let session = try session(transport)
        do throws(TableError<JSONObject>) {
            _ = try await UntypedTable("things", session: session).query()
            Issue.record("a link to another server was followed")
        } catch {
            #expect(error.code == .invalidResponse)
            #expect(error.message.contains("elsewhere.example"))
        }
        #expect(transport.urls.count == 1)
        await session.close()
    }

    @Test func aServerThatIgnoresSkipEndsTheQueryWithAnError() async throws {
        let transport = StubTransport { _ in (200, [:], TablePagingTests.rows(0..<3)) }
        let session = try session(transport)
        do throws(TableError<JSONObject>) {
            _ = try await UntypedTable("things", session: session).query()
            Issue.record("the same page was read forever")
        } catch {
            #expect(error.code == .invalidResponse)
        }
        #expect(transport.urls.count == 2)
        await session.close()
    }

    @Test func storeIDsAreThePrefixAndTheServerIdAndRoundTrip() {
        for serverID in ["abc", "todo-abc", "a/b c", "42"] {
            let storeID = TableRowID.storeID(serverID: serverID, prefix: "todo")
            #expect(storeID == "todo-" + serverID)
            #expect(TableRowID.serverID(fromStoreID: storeID, prefix: "todo") == serverID)
        }
        #expect(TableRowID.prefix(forTable: "stringId_test_table") == "stringidtesttable")
        #expect(TableRowID.prefix(forTable: "2024") == "t2024")
        let id = TableRowID.generate()
        #expect(id.count == 32 && id.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(Array(id)[12] == "4")
        #expect(TableRowID.generate() != id)
    }

    @Test func aServerRowWithAnIdThatCarriesThePrefixRoundTripsThroughTheStore() async throws {
        let transport = StubTransport { _ in (201, [:], #"{"id":"todo-7","text":"t","version":"v1"}"#) }
        let session = try session(transport)
        let table = UntypedTable("todoitem", session: session, prefix: "todo")
        let row = try await table.insert(["id": "todo-7", "text": "t"]).item
        #expect(row.text("id") == "todo-7")
        #expect(session.store.contains("todo-todo-7"))
        #expect(table.stored("todo-7")?.text("version") == "v1")
        await session.close()
    }
}
