import Flatland
import FlatlandHTTP
import FlatlandServer
import FlatlandServerTesting
import Foundation
import SeedSDK
import Testing

@Suite("The example SDK against the sample server")
struct SeedClientTests {
    func withClient(_ body: (SeedClient, SampleServer) async throws -> Void) async throws {
        let server = SampleServer()
        let port = try await server.start()
        let environment = try FlatlandHTTP.Environment(
            name: "local", baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let client = SeedClient(environment: environment, user: "ada")
        do {
            try await body(client, server)
            await client.logout()
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    @Test("register, confirm, me: typed entities in the session's store")
    func registerAndMe() async throws {
        try await withClient { client, _ in
            let login = try await client.register(email: "ada@example.com", firstname: "Ada", model: "Pixel 8")
            #expect(!login.token.isEmpty)
            #expect(!login.confirmed)
            #expect(try await client.confirm().confirmed)
            let me = try await client.me()
            #expect(me.id == login.user)
            #expect(me.firstname == "Ada")
            #expect(me.devices == [login.device!])
            let mine = try await client.myDevices()
            #expect(mine.items.map(\.id) == me.devices)
            #expect(mine.items.first?.model == "Pixel 8")
        }
    }

    @Test("pages in any order, then a partial fetch for exactly what a screen lacks")
    func pagesAndPartialFetch() async throws {
        try await withClient { client, server in
            let later = try await client.devices(offset: 4, count: 2, fields: ["name"])
            let first = try await client.devices(offset: 0, count: 2, fields: ["name"])
            #expect(later.total == server.state.deviceIDs.count)
            #expect(client.knownDevices.count == 6)
            #expect(client.knownDevices.compactMap { $0 }.count == 4)
            #expect(first.items.map(\.id.rawValue) == Array(server.state.deviceIDs.prefix(2)))
            #expect(first.items.allSatisfy { !$0.name.isEmpty && $0.model.isEmpty })

            let id = EntityID<User>(server.state.userIDs[0])
            let partial = try await client.user(id, fields: ["firstname"])
            #expect(client.store.record(id)?.presentFields == ["firstname"])
            // Public fields only: another user's email is private (the server leaves it out).
            let full = try await client.user(id, completing: ["firstname", "lastname", "age"])
            #expect(full.firstname == partial.firstname)
            #expect(full.age > 0)
            #expect(full.email.isEmpty)
            let requests = server.testControls.totalRequests
            _ = try await client.user(id, completing: ["firstname", "age"])
            #expect(server.testControls.totalRequests == requests)
        }
    }
}
