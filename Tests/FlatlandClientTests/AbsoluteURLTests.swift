import FlatlandHTTP
import Foundation
import Testing

/// A raw session follows an absolute link of its own server by hand, and refuses one anywhere
/// else before anything is sent.
@Suite struct AbsoluteURLTests {
    func session(_ transport: StubTransport, base: String = "https://api.example.invalid/v1") throws -> Session {
        let environment = try Environment(name: "stub", baseURL: URL(string: base)!)
        return Session(
            user: "ada", environment: environment, configuration: Backend.Configuration(makeTransport: { transport }))
    }

    @Test(arguments: [
        ("https://api.example.invalid/v1/users?page=2&per_page=50", "/users?page=2&per_page=50"),
        ("HTTPS://API.example.invalid:443/v1/tables/todoitem?$skip=50", "/tables/todoitem?$skip=50"),
        ("https://api.example.invalid/v1", "/"),
        ("https://api.example.invalid/v1/a%20b?q=%C3%A9", "/a%20b?q=%C3%A9"),
    ])
    func aLinkOfItsOwnServerIsFollowed(_ link: String, _ endpoint: String) async throws {
        let transport = StubTransport { _ in .init(200, "[]") }
        let session = try session(transport)
        session.credentials.set("secret")
        let result = try await session.send(.get, url: URL(string: link)!)
        #expect(result.status == 200)
        let sent = try #require(transport.sent.first)
        #expect(sent.endpoint == endpoint)
        #expect(sent.url.absoluteString == "https://api.example.invalid/v1" + (endpoint == "/" ? "/" : endpoint))
        #expect(sent.headers["Authorization"] == "Bearer secret")
    }

    @Test(arguments: [
        "https://evil.example/v1/users?page=2",  // another host
        "http://api.example.invalid/v1/users",  // another scheme
        "https://api.example.invalid:8443/v1/users",  // another port
        "https://api.example.invalid/v2/users",  // outside the base path
        "https://api.example.invalid/v1x/users",  // a path that only starts like it
        "https://api.example.invalid.evil.example/v1/users",
    ])
    func aLinkAnywhereElseIsRefusedAndNothingIsSent(_ link: String) async throws {
        let transport = StubTransport { _ in .init(200, "[]") }
        let session = try session(transport)
        session.credentials.set("secret")
        let error = await #expect(throws: HTTPError.self) { try await session.send(.get, url: URL(string: link)!) }
        #expect(error?.code == .outsideEnvironment)
        let task = session.launch(.get, url: URL(string: link)!)
        let launched = await #expect(throws: HTTPError.self) { try await task.value }
        #expect(launched?.code == .outsideEnvironment)
        #expect(launched?.taskID == task.id)
        #expect(transport.sent.isEmpty)
        #expect(session.backend.tasksInFlight.isEmpty)
    }

    @Test func aURLThatIsNotHTTPIsAnInvalidRequest() async throws {
        let transport = StubTransport { _ in .init(200, "[]") }
        let session = try session(transport)
        let error = await #expect(throws: HTTPError.self) {
            try await session.send(.get, url: URL(string: "ftp://api.example.invalid/v1/users")!)
        }
        #expect(error?.code == .invalidRequest)
        #expect(transport.sent.isEmpty)
    }
}
