import Flatland
import FlatlandFixtures
import FlatlandJSON
import Foundation
import NIOConcurrencyHelpers

/// The sample backend's data: users, devices and sessions in a Flatland store (the server
/// dogfoods the same store and ingestor), with the order of listings, an ETag version per
/// entity and the session tokens. One instance per server.
public final class SampleState: Sendable {
    /// The size and seed of the sample population.
    public struct Population: Sendable, Hashable {
        /// How many users (each with two devices).
        public var users: Int
        /// How many of them have a seeded session.
        public var sessions: Int
        /// The generator's seed: the same seed gives the same population.
        public var seed: UInt64

        /// A population.
        public init(users: Int = 24, sessions: Int = 3, seed: UInt64 = 0x5EED) {
            self.users = users
            self.sessions = sessions
            self.seed = seed
        }
    }

    struct SessionInfo {
        var id: String
        var user: String
        var device: String
        var confirmed: Bool
        var created = ContinuousClock.now
    }

    struct Tables {
        var users: [String] = []
        var devices: [String] = []
        var owner: [String: String] = [:]
        var versions: [String: Int] = [:]
        var sessions: [String: SessionInfo] = [:]
        /// Tokens of the sessions not confirmed yet (bounded by the server's limits).
        var pending: Set<String> = []
        var seededTokens: [String] = []
    }

    /// The entities.
    public let store: Store
    let tables: NIOLockedValueBox<Tables>

    /// A state holding `population`.
    public init(population: Population = Population()) {
        store = Store(registry: seedFixtureRegistry())
        var generator = SeedGenerator(seed: population.seed)
        var t = Tables()
        if population.users > 0 {
            let slice = generator.userSlice(count: population.users)
            // The generator's output is valid by construction.
            try! store.ingest(slice)
        }
        t.users = generator.userIDs
        for user in t.users {
            for device in store.entity(EntityID<SeedUser>(user))?.devices ?? [] {
                t.devices.append(device.rawValue)
                t.owner[device.rawValue] = user
            }
        }
        for id in t.users + t.devices { t.versions[id] = 1 }
        for i in 0..<min(population.sessions, t.users.count) {
            let user = t.users[i]
            guard let device = store.entity(EntityID<SeedUser>(user))?.devices.first else { continue }
            var session = SeedSession(id: EntityID(generator.id("s")))
            session.user = EntityID(user)
            session.device = device
            session.created = Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 86_400)
            try! store.upsert(session)
            // Random like every other token: a predictable one would let anyone in as this user.
            var rng = SecureRandom()
            let token = EntityIDFormat.generate(prefix: "tok", using: &rng)
            t.seededTokens.append(token)
            t.sessions[token] = SessionInfo(
                id: session.id.rawValue, user: user, device: device.rawValue, confirmed: true)
            t.versions[session.id.rawValue] = 1
        }
        tables = NIOLockedValueBox(t)
    }

    /// Users, in listing order.
    public var userIDs: [String] { tables.withLockedValue { $0.users } }
    /// Devices, in listing order.
    public var deviceIDs: [String] { tables.withLockedValue { $0.devices } }
    /// The tokens of the seeded (confirmed) sessions: the first belongs to the first user of
    /// ``userIDs``, and so on. They are random, like every token the server hands out.
    public var seededSessionTokens: [String] { tables.withLockedValue { $0.seededTokens } }
    /// Registrations (`POST /session`) waiting for their `PUT /session`: at most the server's
    /// ``SampleServer/Limits/maxPendingSessions``.
    public var pendingSessionCount: Int { tables.withLockedValue { $0.pending.count } }
    /// The ETag version of an entity.
    public func version(of id: String) -> Int? { tables.withLockedValue { $0.versions[id] } }
}
