import Flatland
import Foundation

/// A user of the seed's API, as an SDK declares it.
public struct SeedUser: Entity, Equatable {
    public static let prefix = "u"
    public var id: EntityID<SeedUser>
    public var firstname = ""
    public var lastname = ""
    public var email = ""
    public var age = 0
    public var gender = ""
    public var verified = false
    public var score = 0.0
    public var created: Date?
    public var avatar: URL?
    public var devices: [EntityID<SeedDevice>] = []
    public var friends: [EntityID<SeedUser>] = []

    public init(id: EntityID<SeedUser>) { self.id = id }

    public static let fields: [Field<SeedUser>] = [
        Field("firstname", \.firstname), Field("lastname", \.lastname), Field("email", \.email),
        Field("age", \.age), Field("gender", \.gender), Field("verified", \.verified), Field("score", \.score),
        Field("created", \.created), Field("avatar", \.avatar), Field("devices", \.devices),
        Field("friends", \.friends),
    ]
    public static let indexes: [EntityIndex<SeedUser>] = [EntityIndex("email", \.email)]
}

/// A device of the seed's API.
public struct SeedDevice: Entity, Equatable {
    public static let prefix = "d"
    public var id: EntityID<SeedDevice>
    public var name = ""
    public var model = ""
    public var os = ""
    public var osVersion = ""
    public var pushToken = ""
    public var lastSeen: Date?

    public init(id: EntityID<SeedDevice>) { self.id = id }

    public static let fields: [Field<SeedDevice>] = [
        Field("name", \.name), Field("model", \.model), Field("os", \.os), Field("osVersion", \.osVersion),
        Field("pushToken", \.pushToken), Field("lastSeen", \.lastSeen),
    ]
}

/// A session of the seed's API: one user on one device.
public struct SeedSession: Entity, Equatable {
    public static let prefix = "s"
    public var id: EntityID<SeedSession>
    public var created: Date?
    public var user: EntityID<SeedUser>?
    public var device: EntityID<SeedDevice>?

    public init(id: EntityID<SeedSession>) { self.id = id }

    public static let fields: [Field<SeedSession>] = [
        Field("created", \.created), Field("user", \.user), Field("device", \.device),
    ]
}

/// The seed's entity types, registered.
public func seedFixtureRegistry() -> EntityRegistry {
    // The three prefixes are distinct, so registration cannot fail.
    try! EntityRegistry([SeedSession.self, SeedUser.self, SeedDevice.self])
}

/// The same model as plain `Codable` structs: what an SDK author writes today with
/// `JSONDecoder`. Used by the benchmarks to compare on the same bytes and the same fields.
public enum SeedCodable {
    public struct Device: Codable, Sendable {
        public var uuid: String
        public var name: String
        public var model: String
        public var os: String
        public var osVersion: String
        public var pushToken: String
        public var lastSeen: Date
    }

    public struct Friend: Codable, Sendable {
        public var uuid: String
        public var firstname: String
    }

    public struct User: Codable, Sendable {
        public var uuid: String
        public var firstname: String
        public var lastname: String
        public var email: String
        public var age: Int
        public var gender: String
        public var verified: Bool
        public var score: Double
        public var created: Date
        public var avatar: URL
        public var devices: [Device]
        public var friends: [Friend]
    }

    public struct Session: Codable, Sendable {
        public var uuid: String
        public var created: Date
        public var user: User
        public var device: Device
    }

    public struct Slice<Item: Codable & Sendable>: Codable, Sendable {
        public var offset: Int
        public var count: Int
        public var total: Int
        public var data: [Item]
    }

    public struct Response: Codable, Sendable {
        public var session: Session
        public var users: Slice<User>
    }

    /// What an SDK keeps: every entity by id, devices and friends normalized out.
    public struct Tables: Sendable {
        public var users: [String: User] = [:]
        public var devices: [String: Device] = [:]
        public var sessions: [String: Session] = [:]
        public var friends: [String: Friend] = [:]
        public init() {}
        public var count: Int { users.count + devices.count + sessions.count + friends.count }

        mutating func insert(_ user: User) {
            users[user.uuid] = user
            for device in user.devices { devices[device.uuid] = device }
            for friend in user.friends where users[friend.uuid] == nil { friends[friend.uuid] = friend }
        }

        public mutating func insert(_ response: Response) {
            sessions[response.session.uuid] = response.session
            insert(response.session.user)
            devices[response.session.device.uuid] = response.session.device
            for user in response.users.data { insert(user) }
        }
    }

    /// Decodes with `JSONDecoder` (ISO 8601 dates with fractional seconds) and keeps the tables.
    public static func decode(_ bytes: Data) throws -> Tables {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { d in
            let text = try d.singleValueContainer().decode(String.self)
            guard let date = parseISO8601(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: d.codingPath, debugDescription: "bad date"))
            }
            return date
        }
        var tables = Tables()
        tables.insert(try decoder.decode(Response.self, from: bytes))
        return tables
    }

    /// Parses with `JSONSerialization` and maps by hand into the same structs.
    public static func serialization(_ bytes: Data) throws -> Tables {
        guard let root = try JSONSerialization.jsonObject(with: bytes) as? [String: Any],
            let session = root["session"] as? [String: Any], let users = root["users"] as? [String: Any],
            let data = users["data"] as? [[String: Any]]
        else { throw MappingError() }
        var tables = Tables()
        tables.insert(
            Response(
                session: try mapSession(session),
                users: Slice(
                    offset: try int(users["offset"]), count: try int(users["count"]), total: try int(users["total"]),
                    data: try data.map(mapUser))))
        return tables
    }

    struct MappingError: Error {}

    static func string(_ v: Any?) throws -> String {
        guard let s = v as? String else { throw MappingError() }
        return s
    }
    static func int(_ v: Any?) throws -> Int {
        guard let n = v as? NSNumber else { throw MappingError() }
        return n.intValue
    }
    static func double(_ v: Any?) throws -> Double {
        guard let n = v as? NSNumber else { throw MappingError() }
        return n.doubleValue
    }
    static func bool(_ v: Any?) throws -> Bool {
        guard let n = v as? Bool else { throw MappingError() }
        return n
    }
    static func date(_ v: Any?) throws -> Date {
        guard let d = parseISO8601(try string(v)) else { throw MappingError() }
        return d
    }

    static func mapDevice(_ o: [String: Any]) throws -> Device {
        Device(
            uuid: try string(o["uuid"]), name: try string(o["name"]), model: try string(o["model"]),
            os: try string(o["os"]), osVersion: try string(o["osVersion"]), pushToken: try string(o["pushToken"]),
            lastSeen: try date(o["lastSeen"]))
    }

    static func mapUser(_ o: [String: Any]) throws -> User {
        guard let devices = o["devices"] as? [[String: Any]], let friends = o["friends"] as? [[String: Any]],
            let avatar = URL(string: try string(o["avatar"]))
        else { throw MappingError() }
        return User(
            uuid: try string(o["uuid"]), firstname: try string(o["firstname"]), lastname: try string(o["lastname"]),
            email: try string(o["email"]), age: try int(o["age"]), gender: try string(o["gender"]),
            verified: try bool(o["verified"]), score: try double(o["score"]), created: try date(o["created"]),
            avatar: avatar, devices: try devices.map(mapDevice),
            friends: try friends.map { Friend(uuid: try string($0["uuid"]), firstname: try string($0["firstname"])) })
    }

    static func mapSession(_ o: [String: Any]) throws -> Session {
        guard let user = o["user"] as? [String: Any], let device = o["device"] as? [String: Any] else {
            throw MappingError()
        }
        return Session(
            uuid: try string(o["uuid"]), created: try date(o["created"]), user: try mapUser(user),
            device: try mapDevice(device))
    }
}

/// ISO 8601 with fractional seconds through Foundation, as a Codable SDK would parse it.
func parseISO8601(_ text: String) -> Date? {
    try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
}
