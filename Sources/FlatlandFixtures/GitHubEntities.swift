import Flatland
import Foundation

/// An event of GitHub's events API (`github_events.json`).
public struct GitHubEvent: Entity {
    public static let prefix = "ev"
    public var id: EntityID<GitHubEvent>
    public var type = ""
    public var isPublic = false
    public var createdAt: Date?
    public var actor: EntityID<GitHubUser>?
    public var repo: EntityID<GitHubRepo>?
    public var org: EntityID<GitHubOrg>?

    public init(id: EntityID<GitHubEvent>) { self.id = id }

    public static let fields: [Field<GitHubEvent>] = [
        Field("type", \.type), Field("public", \.isPublic), Field("created_at", \.createdAt),
        Field("actor", \.actor), Field("repo", \.repo), Field("org", \.org),
    ]
}

/// A GitHub user (an event's actor).
public struct GitHubUser: Entity {
    public static let prefix = "gu"
    public var id: EntityID<GitHubUser>
    public var login = ""
    public var gravatarID = ""
    public var avatarURL = ""
    public var url = ""
    public init(id: EntityID<GitHubUser>) { self.id = id }
    public static let fields: [Field<GitHubUser>] = [
        Field("login", \.login), Field("gravatar_id", \.gravatarID), Field("avatar_url", \.avatarURL),
        Field("url", \.url),
    ]
}

/// A GitHub repository.
public struct GitHubRepo: Entity {
    public static let prefix = "gr"
    public var id: EntityID<GitHubRepo>
    public var name = ""
    public var url = ""
    public init(id: EntityID<GitHubRepo>) { self.id = id }
    public static let fields: [Field<GitHubRepo>] = [Field("name", \.name), Field("url", \.url)]
}

/// A GitHub organisation.
public struct GitHubOrg: Entity {
    public static let prefix = "go"
    public var id: EntityID<GitHubOrg>
    public var login = ""
    public var gravatarID = ""
    public var avatarURL = ""
    public var url = ""
    public init(id: EntityID<GitHubOrg>) { self.id = id }
    public static let fields: [Field<GitHubOrg>] = [
        Field("login", \.login), Field("gravatar_id", \.gravatarID), Field("avatar_url", \.avatarURL),
        Field("url", \.url),
    ]
}

/// GitHub: events by their type (`…Event`), actors, repos and orgs by the key they sit under;
/// ids are numbers or digit strings, made `<prefix>-<id>`.
public enum GitHub {
    /// The registry of the GitHub types.
    public static func registry() -> EntityRegistry {
        try! EntityRegistry([GitHubEvent.self, GitHubUser.self, GitHubRepo.self, GitHubOrg.self])
    }

    /// The identity rules of GitHub's events API.
    public static let resolver = RuleResolver([
        .init(prefix: "ev", idKey: "id", typeKey: "type", typeSuffix: "Event", nested: false),
        .init(prefix: "gu", idKey: "id", parentKeys: ["actor"]),
        .init(prefix: "gr", idKey: "id", parentKeys: ["repo"]),
        .init(prefix: "go", idKey: "id", parentKeys: ["org"]),
    ])

    /// The same model as `Codable` structs.
    public struct Actor: Codable, Sendable {
        public var id: Int
        public var login: String
        public var gravatar_id: String
        public var avatar_url: String
        public var url: String
    }

    public struct Repo: Codable, Sendable {
        public var id: Int
        public var name: String
        public var url: String
    }

    public struct Event: Codable, Sendable {
        public var id: String
        public var type: String
        public var `public`: Bool
        public var created_at: Date
        public var actor: Actor
        public var repo: Repo
        public var org: Actor?
    }

    /// Every entity by id.
    public struct Tables: Sendable {
        public var events: [String: Event] = [:]
        public var actors: [Int: Actor] = [:]
        public var repos: [Int: Repo] = [:]
        public var orgs: [Int: Actor] = [:]
        public init() {}
        public var count: Int { events.count + actors.count + repos.count + orgs.count }

        public mutating func insert(_ e: Event) {
            events[e.id] = e
            actors[e.actor.id] = e.actor
            repos[e.repo.id] = e.repo
            if let org = e.org { orgs[org.id] = org }
        }
    }

    /// `JSONDecoder` into the Codable model.
    public static func decode(_ bytes: Data) throws -> Tables {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var tables = Tables()
        for e in try decoder.decode([Event].self, from: bytes) { tables.insert(e) }
        return tables
    }

    /// `JSONSerialization` mapped by hand into the Codable model.
    public static func serialization(_ bytes: Data) throws -> Tables {
        typealias C = SeedCodable
        guard let events = try JSONSerialization.jsonObject(with: bytes) as? [[String: Any]] else {
            throw C.MappingError()
        }
        func actor(_ o: [String: Any]) throws -> Actor {
            Actor(
                id: try C.int(o["id"]), login: try C.string(o["login"]), gravatar_id: try C.string(o["gravatar_id"]),
                avatar_url: try C.string(o["avatar_url"]), url: try C.string(o["url"]))
        }
        var tables = Tables()
        for o in events {
            guard let a = o["actor"] as? [String: Any], let r = o["repo"] as? [String: Any],
                let created = try? Date.ISO8601FormatStyle().parse(try C.string(o["created_at"]))
            else { throw C.MappingError() }
            tables.insert(
                Event(
                    id: try C.string(o["id"]), type: try C.string(o["type"]), public: try C.bool(o["public"]),
                    created_at: created, actor: try actor(a),
                    repo: Repo(id: try C.int(r["id"]), name: try C.string(r["name"]), url: try C.string(r["url"])),
                    org: try (o["org"] as? [String: Any]).map(actor)))
        }
        return tables
    }
}
