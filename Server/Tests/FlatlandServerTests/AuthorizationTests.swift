import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandServer
import Testing

/// Who sends a request: no token, a token the server never gave out, the token of another
/// user (the second seeded user), or the owner's (the first seeded user).
enum Sender: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case nobody, wrongToken, otherUser, owner

    var testDescription: String { rawValue }

    func token(_ server: SampleServer) -> String? {
        switch self {
        case .nobody: nil
        case .wrongToken: "tok-0000000000000000000000000000000"
        case .otherUser: server.state.seededSessionTokens[1]
        case .owner: server.state.seededSessionTokens[0]
        }
    }
}

/// Every route for each kind of sender, over loopback: who may read and write what (the rules
/// of the server's "Authorization" article).
@Suite("Authorization: every route, every kind of sender")
struct AuthorizationTests {
    /// The owner's user, one of the owner's devices, and one of the other user's devices.
    struct Cast {
        var owner: String
        var other: String
        var ownerDevice: String
        var otherDevice: String

        init(_ server: SampleServer) throws {
            owner = server.state.userIDs[0]
            other = server.state.userIDs[1]
            let devices = try #require(server.state.store.entity(EntityID<SeedUser>(owner))?.devices)
            let otherDevices = try #require(server.state.store.entity(EntityID<SeedUser>(other))?.devices)
            ownerDevice = try #require(devices.first).rawValue
            otherDevice = try #require(otherDevices.first).rawValue
        }
    }

    /// A public read as `sender`: a wrong token must get 401 (then nil), anyone else 200.
    func publicRead(_ path: String, as sender: Sender, _ server: SampleServer, _ port: Int) async throws -> RawResponse?
    {
        let reply = try await request(port: port, "GET", path, token: sender.token(server))
        guard sender != .wrongToken else {
            #expect(reply.status == 401)
            return nil
        }
        #expect(reply.status == 200)
        return reply
    }

    /// `{uuid → object}` of a slice's items.
    func byID(_ slice: JSONValue?) -> [String: [String: JSONValue]] {
        var result: [String: [String: JSONValue]] = [:]
        for item in slice?.items ?? [] { result[item["uuid"]?.stringValue ?? ""] = item.members }
        return result
    }

    @Test("GET /users: public; an email only to its own user", arguments: Sender.allCases)
    func listUsers(_ sender: Sender) async throws {
        try await withServer { server, port in
            let cast = try Cast(server)
            guard let reply = try await publicRead("/users?offset=0&count=10", as: sender, server, port) else { return }
            let users = byID(reply.json)
            #expect(users.count == server.state.userIDs.count)
            let withEmail = Set(users.filter { $0.value["email"] != nil }.keys)
            switch sender {
            case .owner: #expect(withEmail == [cast.owner])
            case .otherUser: #expect(withEmail == [cast.other])
            default: #expect(withEmail.isEmpty)
            }
            #expect(users.values.allSatisfy { $0["firstname"]?.stringValue?.isEmpty == false })
        }
    }

    @Test("GET /users/{id}: public; the email only to that user", arguments: Sender.allCases)
    func readUser(_ sender: Sender) async throws {
        try await withServer { server, port in
            let cast = try Cast(server)
            guard let reply = try await publicRead("/users/\(cast.owner)", as: sender, server, port) else { return }
            #expect(reply.json?["uuid"]?.stringValue == cast.owner)
            #expect(reply.json?["lastname"] != nil)
            #expect((reply.json?["email"] != nil) == (sender == .owner))
            // Asking for it by name does not help.
            let asked = try await request(
                port: port, "GET", "/users/\(cast.owner)?fields=email,firstname", token: sender.token(server))
            #expect((asked.json?["email"] != nil) == (sender == .owner))
            #expect(asked.json?["firstname"] != nil)
        }
    }

    @Test("GET /devices: public; a push token only to the device's owner", arguments: Sender.allCases)
    func listDevices(_ sender: Sender) async throws {
        try await withServer { server, port in
            guard let reply = try await publicRead("/devices?offset=0&count=100", as: sender, server, port) else {
                return
            }
            let devices = byID(reply.json)
            #expect(devices.count == server.state.deviceIDs.count)
            let withToken = Set(devices.filter { $0.value["pushToken"] != nil }.keys)
            let expected: Set<String> =
                switch sender {
                case .owner: devicesOf(server, 0)
                case .otherUser: devicesOf(server, 1)
                default: []
                }
            #expect(withToken == expected)
            #expect(!expected.isEmpty || sender == .nobody)
        }
    }

    func devicesOf(_ server: SampleServer, _ user: Int) -> Set<String> {
        Set(server.state.store.entity(EntityID<SeedUser>(server.state.userIDs[user]))?.devices.map(\.rawValue) ?? [])
    }

    @Test("GET /devices/{id}: public; the push token only to its owner", arguments: Sender.allCases)
    func readDevice(_ sender: Sender) async throws {
        try await withServer { server, port in
            let cast = try Cast(server)
            guard
                let reply = try await publicRead(
                    "/devices/\(cast.ownerDevice)?fields=name,pushToken", as: sender, server, port)
            else { return }
            #expect(reply.json?["name"] != nil)
            #expect((reply.json?["pushToken"] != nil) == (sender == .owner))
        }
    }

    @Test("PATCH /users/{id}: only that user's token", arguments: Sender.allCases)
    func patchUser(_ sender: Sender) async throws {
        try await withServer { server, port in
            let cast = try Cast(server)
            let before = try #require(server.state.store.entity(EntityID<SeedUser>(cast.owner)))
            let reply = try await request(
                port: port, "PATCH", "/users/\(cast.owner)", token: sender.token(server),
                body: #"{"email":"mallory@example.com","firstname":"Mallory"}"#)
            let after = try #require(server.state.store.entity(EntityID<SeedUser>(cast.owner)))
            switch sender {
            case .nobody, .wrongToken:
                #expect(reply.status == 401)
                #expect(after == before)
            case .otherUser:
                #expect(reply.status == 403)
                #expect(after == before)
            case .owner:
                #expect(reply.status == 200)
                #expect(after.email == "mallory@example.com" && after.firstname == "Mallory")
                #expect(reply.json?["email"]?.stringValue == "mallory@example.com")
            }
        }
    }

    @Test("DELETE /users/{id}: only that user's token", arguments: Sender.allCases)
    func deleteUser(_ sender: Sender) async throws {
        try await withServer { server, port in
            let cast = try Cast(server)
            let reply = try await request(port: port, "DELETE", "/users/\(cast.owner)", token: sender.token(server))
            let exists = server.state.store.contains(EntityID<SeedUser>(cast.owner))
            switch sender {
            case .nobody, .wrongToken:
                #expect(reply.status == 401)
                #expect(exists)
            case .otherUser:
                #expect(reply.status == 403)
                #expect(exists)
            case .owner:
                #expect(reply.status == 204)
                #expect(!exists)
                // The deleted user's token no longer works.
                let me = try await request(port: port, "GET", "/user/me", token: sender.token(server))
                #expect(me.status == 401)
            }
        }
    }

    @Test("GET /user/me and /user/me/devices: the token's own user and devices", arguments: Sender.allCases)
    func me(_ sender: Sender) async throws {
        try await withServer { server, port in
            let token = sender.token(server)
            let me = try await request(port: port, "GET", "/user/me", token: token)
            let devices = try await request(port: port, "GET", "/user/me/devices", token: token)
            let user: Int
            switch sender {
            case .nobody, .wrongToken:
                #expect(me.status == 401)
                #expect(devices.status == 401)
                return
            case .otherUser: user = 1
            case .owner: user = 0
            }
            #expect(me.status == 200)
            #expect(me.json?["uuid"]?.stringValue == server.state.userIDs[user])
            #expect(me.json?["email"] != nil)
            #expect(devices.status == 200)
            let listed = byID(devices.json)
            #expect(Set(listed.keys) == devicesOf(server, user))
            #expect(listed.values.allSatisfy { $0["pushToken"] != nil })
        }
    }

    @Test("PATCH /user/me: the token's own user", arguments: Sender.allCases)
    func patchMe(_ sender: Sender) async throws {
        try await withServer { server, port in
            let reply = try await request(
                port: port, "PATCH", "/user/me", token: sender.token(server), body: #"{"lastname":"Changed"}"#)
            let changed = server.state.userIDs.filter {
                server.state.store.entity(EntityID<SeedUser>($0))?.lastname == "Changed"
            }
            switch sender {
            case .nobody, .wrongToken:
                #expect(reply.status == 401)
                #expect(changed.isEmpty)
            case .otherUser:
                #expect(reply.status == 200)
                #expect(changed == [server.state.userIDs[1]])
            case .owner:
                #expect(reply.status == 200)
                #expect(changed == [server.state.userIDs[0]])
            }
        }
    }

    @Test("PATCH /user/me cannot attach another user's device (403, nothing applied)")
    func cannotTakeAnotherUsersDevice() async throws {
        try await withServer { server, port in
            let cast = try Cast(server)
            let token = Sender.owner.token(server)
            let before = try #require(server.state.store.entity(EntityID<SeedUser>(cast.owner)))
            let reply = try await request(
                port: port, "PATCH", "/user/me", token: token,
                body: #"{"firstname":"Eve","devices":["\#(cast.ownerDevice)","\#(cast.otherDevice)"]}"#)
            #expect(reply.status == 403)
            #expect(reply.json?["error"]?["field"]?.stringValue == "devices")
            #expect(server.state.store.entity(EntityID<SeedUser>(cast.owner)) == before)
            let mine = try await request(port: port, "GET", "/user/me/devices", token: token)
            #expect(!byID(mine.json).keys.contains(cast.otherDevice))
            let device = try await request(port: port, "GET", "/devices/\(cast.otherDevice)", token: token)
            #expect(device.json?["pushToken"] == nil)
            // Its own devices, reordered or dropped, are fine.
            let own = try await request(
                port: port, "PATCH", "/user/me", token: token, body: #"{"devices":["\#(cast.ownerDevice)"]}"#)
            #expect(own.status == 200)
        }
    }

    @Test("POST and PUT /session: anyone registers; only the registration's token confirms")
    func register() async throws {
        try await withServer { server, port in
            let registered = try await request(
                port: port, "POST", "/session",
                body: #"{"email":"ada@example.com","firstname":"Ada","device":{"name":"phone","pushToken":"p-1"}}"#)
            #expect(registered.status == 201)
            let token = try #require(registered.json?["token"]?.stringValue)
            // The registrant sees their own private fields.
            #expect(registered.json?["user"]?["email"]?.stringValue == "ada@example.com")
            #expect(registered.json?["device"]?["pushToken"]?.stringValue == "p-1")
            let user = try #require(registered.json?["user"]?["uuid"]?.stringValue)
            // Not confirmed yet: owner routes are refused, public ones show no private field.
            #expect(try await request(port: port, "GET", "/user/me", token: token).status == 403)
            let early = try await request(port: port, "GET", "/users/\(user)", token: token)
            #expect(early.status == 200 && early.json?["email"] == nil)

            for sender in [Sender.nobody, .wrongToken] {
                #expect(try await request(port: port, "PUT", "/session", token: sender.token(server)).status == 401)
            }
            let confirmed = try await request(port: port, "PUT", "/session", token: token)
            #expect(confirmed.status == 200)
            #expect(confirmed.json?["confirmed"] == .bool(true))
            let me = try await request(port: port, "GET", "/user/me", token: token)
            #expect(me.json?["email"]?.stringValue == "ada@example.com")
        }
    }

    @Test("the seeded tokens are random: two servers with the same seed hand out different ones")
    func seededTokensAreRandom() async throws {
        let population = SampleState.Population(users: 3, sessions: 2, seed: 42)
        let first = SampleState(population: population).seededSessionTokens
        let second = SampleState(population: population).seededSessionTokens
        #expect(first.count == 2)
        #expect(Set(first).isDisjoint(with: second))
        #expect(!first.contains("seed-token-0"))
    }
}
