import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandServer
import FlatlandServerTesting
import Foundation
import Testing

@Suite("Sessions and environments")
struct SessionTests {
    @Test("two sessions, two users: separate stores; logout wipes only its own")
    func twoUsers() async throws {
        try await withServer { server, environment in
            let ada = makeSession(environment, user: "ada")
            let grace = makeSession(environment, user: "grace")
            let adaID = try await register(ada, email: "ada@example.com", firstname: "Ada")
            let graceID = try await register(grace, email: "grace@example.com", firstname: "Grace")
            #expect(adaID != graceID)
            #expect(ada.store.entity(EntityID<SeedUser>(adaID))?.firstname == "Ada")
            #expect(grace.store.entity(EntityID<SeedUser>(graceID))?.email == "grace@example.com")
            #expect(!ada.store.contains(graceID))
            #expect(!grace.store.contains(adaID))
            let devices = try await ada.send(.get, "/user/me/devices")
            #expect(devices.items.count == 1)
            #expect(!grace.store.contains(devices.items[0]))

            await ada.logout()
            #expect(!ada.isActive)
            #expect(ada.store.count == 0)
            #expect(ada.store.collections.isEmpty)
            #expect(ada.credentials.token == nil)
            #expect(grace.store.contains(graceID))
            #expect(await failure(of: ada.launch(.get, "/devices"))?.code == .sessionEnded)
            _ = try await grace.send(.get, "/user/me")
        }
    }

    @Test("two environments: each session sees only its own server")
    func twoEnvironments() async throws {
        try await withServer(population: .init(users: 10, seed: 1)) { first, production in
            try await withServer(population: .init(users: 10, seed: 2)) { second, development in
                let a = makeSession(production)
                let b = makeSession(development)
                let ra = try await a.send(.get, "/devices?offset=0&count=5")
                let rb = try await b.send(.get, "/devices?offset=0&count=5")
                #expect(ra.items == Array(first.state.deviceIDs.prefix(5)))
                #expect(rb.items == Array(second.state.deviceIDs.prefix(5)))
                #expect(Set(ra.items).isDisjoint(with: rb.items))
                #expect(ra.items.allSatisfy { !b.store.contains($0) })
                #expect(first.knobs.requestCount("GET", "/devices") == 1)
                #expect(second.knobs.requestCount("GET", "/devices") == 1)
            }
        }
    }

    @Test("mirroring one request to two environments compares their answers")
    func mirroring() async throws {
        try await withServer(population: .init(users: 6, seed: 7)) { primary, production in
            try await withServer(population: .init(users: 6, seed: 7)) { candidate, development in
                let a = makeSession(production)
                let b = makeSession(development)
                // The same user on both (writes to a user need that user's token).
                a.credentials.token = primary.state.seededSessionTokens[1]
                b.credentials.token = candidate.state.seededSessionTokens[1]
                let same = await Mirroring.compare(
                    .get, "/users?offset=0&count=4", primary: a.backend, candidate: b.backend)
                #expect(same.matches, "\(same.differences)")
                #expect(try same.primary.get().items.count == 4)

                let changed = candidate.state.userIDs[1]
                _ = try await b.send(.patch, "/users/\(changed)", body: Array(#"{"age":123}"#.utf8))
                let different = await Mirroring.compare(
                    .get, "/users?offset=0&count=4", primary: a.backend, candidate: b.backend)
                #expect(!different.matches)
                #expect(different.differences == ["\(changed): fields differ: age"])

                let missing = await Mirroring.compare(
                    .get, "/users/u-nobody", primary: a.backend, candidate: b.backend)
                #expect(missing.matches)
            }
        }
    }

    @Test("PATCH with an ETag: a stale If-Match is refused with 412")
    func etags() async throws {
        try await withServer { server, environment in
            let session = makeSession(environment)
            session.credentials.token = server.state.seededSessionTokens[0]
            let id = server.state.userIDs[0]
            let got = try await session.send(.get, "/users/\(id)")
            let etag = try #require(got.headers["ETag"])
            let patched = try await session.send(
                .patch, "/users/\(id)", body: Array(#"{"firstname":"Zoë"}"#.utf8), headers: ["If-Match": etag])
            #expect(patched.headers["ETag"] != etag)
            #expect(session.store.entity(EntityID<SeedUser>(id))?.firstname == "Zoë")
            let stale = session.launch(
                .patch, "/users/\(id)", body: Array(#"{"firstname":"Ada"}"#.utf8), headers: ["If-Match": etag])
            #expect(await failure(of: stale)?.status == 412)
            #expect(session.store.entity(EntityID<SeedUser>(id))?.firstname == "Zoë")
            let deleted = try await session.send(.delete, "/users/\(id)")
            #expect(deleted.status == 204 && deleted.ingest == nil)
            // The deleted user's token ended with them; the public read needs none.
            session.credentials.token = nil
            #expect(await failure(of: session.launch(.get, "/users/\(id)"))?.status == 404)
        }
    }

    @Test(
        "HTTPS is required except for loopback or an explicit opt-in",
        arguments: [
            ("http://example.com", false, false), ("http://10.0.0.1:8080", false, false),
            ("http://example.com", true, true), ("https://example.com/v1", false, true),
            ("http://127.0.0.1:8080", false, true), ("http://localhost:1", false, true),
            ("http://[::1]:80", false, true),
        ])
    func httpsRequired(url: String, optIn: Bool, allowed: Bool) throws {
        do {
            let environment = try Environment(name: "x", baseURL: URL(string: url)!, allowInsecureHTTP: optIn)
            #expect(allowed, "\(url) should be refused")
            #expect(environment.url(for: "/devices?offset=0")?.absoluteString.hasSuffix("/devices?offset=0") == true)
        } catch {
            #expect(!allowed, "\(url) should be allowed: \(error)")
            #expect(error.code == .insecure)
        }
    }
}
