import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandServer
import FlatlandServerTesting
import Testing

/// What a client can make the server keep: unconfirmed sessions and the test knobs' per-path
/// tables stay within their bounds however many requests arrive.
@Suite("Bounded state under many requests")
struct BoundsTests {
    static let registration = #"{"email":"bot@example.com","device":{"name":"bot"}}"#

    @Test("unconfirmed sessions stop at the bound; past it POST /session is 503 with Retry-After")
    func pendingSessionsAreBounded() async throws {
        let limits = SampleServer.Limits(maxPendingSessions: 5)
        try await withServer(.init(population: .init(users: 2, sessions: 1), limits: limits)) { server, port in
            let users = server.state.userIDs.count
            var statuses: [Int] = []
            var tokens: [String] = []
            for _ in 0..<12 {
                let reply = try await request(port: port, "POST", "/session", body: Self.registration)
                statuses.append(reply.status)
                if let token = reply.json?["token"]?.stringValue { tokens.append(token) }
                if reply.status == 503 { #expect(reply.headers["retry-after"] != nil) }
            }
            #expect(statuses == Array(repeating: 201, count: 5) + Array(repeating: 503, count: 7))
            #expect(server.state.pendingSessionCount == 5)
            #expect(server.state.userIDs.count == users + 5)
            // A confirmation frees a place.
            #expect(try await request(port: port, "PUT", "/session", token: tokens[0]).status == 200)
            #expect(server.state.pendingSessionCount == 4)
            #expect(try await request(port: port, "POST", "/session", body: Self.registration).status == 201)
            #expect(server.state.pendingSessionCount == 5)
        }
    }

    @Test("expired registrations are removed whole, and their tokens stop working")
    func pendingSessionsExpire() async throws {
        // A lifetime of zero: every registration has expired by the next request.
        let limits = SampleServer.Limits(maxPendingSessions: 3, pendingSessionLifetime: .zero)
        try await withServer(.init(population: .init(users: 2, sessions: 1), limits: limits)) { server, port in
            let users = server.state.userIDs.count
            let devices = server.state.deviceIDs.count
            let records = server.state.store.count
            var last: RawResponse?
            for _ in 0..<50 {
                let reply = try await request(port: port, "POST", "/session", body: Self.registration)
                #expect(reply.status == 201)
                last = reply
            }
            #expect(server.state.pendingSessionCount == 1)
            #expect(server.state.userIDs.count == users + 1)
            #expect(server.state.deviceIDs.count == devices + 1)
            #expect(server.state.store.count == records + 3)
            let token = try #require(last?.json?["token"]?.stringValue)
            #expect(try await request(port: port, "PUT", "/session", token: token).status == 401)
            #expect(server.state.pendingSessionCount == 0)
            #expect(server.state.userIDs.count == users)
            #expect(server.state.store.count == records)
        }
    }

    @Test("requests to many distinct paths leave at most the bound in the knobs' tables")
    func knobTablesAreBounded() async throws {
        let limits = SampleServer.Limits(trackedPaths: 16)
        try await withServer(.init(population: .init(users: 2), limits: limits)) { server, port in
            _ = server.knobs  // the controls see requests from their installation on
            let devices = try await request(port: port, "GET", "/devices")
            #expect(devices.status == 200)
            for i in 0..<200 {
                let reply = try await request(port: port, "GET", "/nowhere/\(i)", headers: ["X-Big": "\(i)"])
                #expect(reply.status == 404)
            }
            #expect(server.knobs.totalRequests == 201)
            #expect(server.knobs.trackedPathCount <= 16)
            // The paths seen first are still counted.
            #expect(server.knobs.requestCount("GET", "/devices") == 1)
            #expect(server.knobs.requestCount("GET", "/nowhere/0") == 1)
            #expect(server.knobs.lastHeaders("/nowhere/0")["x-big"] == "0")
            #expect(server.knobs.requestCount("GET", "/nowhere/199") == 0)
        }
    }
}
