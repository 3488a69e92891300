import Flatland
import Foundation

/// A status of Twitter's search API (`twitter.json`), keyed by `id_str`.
public struct TwitterStatus: Entity {
    public static let prefix = "ts"
    public var id: EntityID<TwitterStatus>
    public var text = ""
    public var createdAt = ""
    public var source = ""
    public var truncated = false
    public var inReplyToStatus: String?
    public var inReplyToUser: String?
    public var inReplyToScreenName: String?
    public var user: EntityID<TwitterUser>?
    public var retweetCount = 0
    public var favoriteCount = 0
    public var favorited = false
    public var retweeted = false
    public var lang = ""
    public var retweetedStatus: EntityID<TwitterStatus>?

    public init(id: EntityID<TwitterStatus>) { self.id = id }

    public static let fields: [Field<TwitterStatus>] = [
        Field("text", \.text), Field("created_at", \.createdAt), Field("source", \.source),
        Field("truncated", \.truncated), Field("in_reply_to_status_id_str", \.inReplyToStatus),
        Field("in_reply_to_user_id_str", \.inReplyToUser), Field("in_reply_to_screen_name", \.inReplyToScreenName),
        Field("user", \.user), Field("retweet_count", \.retweetCount), Field("favorite_count", \.favoriteCount),
        Field("favorited", \.favorited), Field("retweeted", \.retweeted), Field("lang", \.lang),
        Field("retweeted_status", \.retweetedStatus),
    ]
}

/// A user of Twitter's API: the author of a status, or a user mentioned in one.
public struct TwitterUser: Entity {
    public static let prefix = "tu"
    public var id: EntityID<TwitterUser>
    public var name = ""
    public var screenName = ""
    public var location = ""
    public var description = ""
    public var url: String?
    public var followersCount = 0
    public var friendsCount = 0
    public var listedCount = 0
    public var createdAt = ""
    public var favouritesCount = 0
    public var utcOffset: Int?
    public var timeZone: String?
    public var verified = false
    public var statusesCount = 0
    public var lang = ""
    public var profileImageURL = ""
    public var protected = false

    public init(id: EntityID<TwitterUser>) { self.id = id }

    public static let fields: [Field<TwitterUser>] = [
        Field("name", \.name), Field("screen_name", \.screenName), Field("location", \.location),
        Field("description", \.description), Field("url", \.url), Field("followers_count", \.followersCount),
        Field("friends_count", \.friendsCount), Field("listed_count", \.listedCount),
        Field("created_at", \.createdAt), Field("favourites_count", \.favouritesCount),
        Field("utc_offset", \.utcOffset), Field("time_zone", \.timeZone), Field("verified", \.verified),
        Field("statuses_count", \.statusesCount), Field("lang", \.lang),
        Field("profile_image_url", \.profileImageURL), Field("protected", \.protected),
    ]
}

/// Twitter: statuses under `statuses` and `retweeted_status`, users under `user` and
/// `user_mentions`, all by `id_str`.
public enum Twitter {
    /// The registry of the Twitter types.
    public static func registry() -> EntityRegistry { try! EntityRegistry([TwitterStatus.self, TwitterUser.self]) }

    /// The identity rules of Twitter's statuses.
    public static let resolver = RuleResolver([
        .init(prefix: "ts", idKey: "id_str", parentKeys: ["statuses", "retweeted_status"]),
        .init(prefix: "tu", idKey: "id_str", parentKeys: ["user", "user_mentions"]),
    ])

    /// The same model as `Codable` structs.
    public struct Mention: Codable, Sendable {
        public var id_str: String
        public var name: String
        public var screen_name: String
    }

    public struct Entities: Codable, Sendable {
        public var user_mentions: [Mention]
    }

    public struct User: Codable, Sendable {
        public var id_str: String
        public var name: String
        public var screen_name: String
        public var location: String
        public var description: String
        public var url: String?
        public var followers_count: Int
        public var friends_count: Int
        public var listed_count: Int
        public var created_at: String
        public var favourites_count: Int
        public var utc_offset: Int?
        public var time_zone: String?
        public var verified: Bool
        public var statuses_count: Int
        public var lang: String
        public var profile_image_url: String
        public var protected: Bool
    }

    public final class Status: Codable, Sendable {
        public let id_str: String
        public let text: String
        public let created_at: String
        public let source: String
        public let truncated: Bool
        public let in_reply_to_status_id_str: String?
        public let in_reply_to_user_id_str: String?
        public let in_reply_to_screen_name: String?
        public let user: User
        public let retweet_count: Int
        public let favorite_count: Int
        public let favorited: Bool
        public let retweeted: Bool
        public let lang: String
        public let entities: Entities
        public let retweeted_status: Status?

        init(
            id_str: String, text: String, created_at: String, source: String, truncated: Bool,
            in_reply_to_status_id_str: String?, in_reply_to_user_id_str: String?, in_reply_to_screen_name: String?,
            user: User, retweet_count: Int, favorite_count: Int, favorited: Bool, retweeted: Bool, lang: String,
            entities: Entities, retweeted_status: Status?
        ) {
            self.id_str = id_str
            self.text = text
            self.created_at = created_at
            self.source = source
            self.truncated = truncated
            self.in_reply_to_status_id_str = in_reply_to_status_id_str
            self.in_reply_to_user_id_str = in_reply_to_user_id_str
            self.in_reply_to_screen_name = in_reply_to_screen_name
            self.user = user
            self.retweet_count = retweet_count
            self.favorite_count = favorite_count
            self.favorited = favorited
            self.retweeted = retweeted
            self.lang = lang
            self.entities = entities
            self.retweeted_status = retweeted_status
        }
    }

    public struct Response: Codable, Sendable {
        public var statuses: [Status]
    }

    /// Statuses and users by id, users normalized out of statuses.
    public struct Tables: Sendable {
        public var statuses: [String: Status] = [:]
        public var users: [String: User] = [:]
        public var mentions: [String: Mention] = [:]
        public init() {}
        /// Entities by id: a mention kept before its user's full record was met is the same user.
        public var count: Int { statuses.count + users.count + mentions.keys.filter { users[$0] == nil }.count }

        public mutating func insert(_ status: Status) {
            statuses[status.id_str] = status
            users[status.user.id_str] = status.user
            for m in status.entities.user_mentions where users[m.id_str] == nil { mentions[m.id_str] = m }
            if let rt = status.retweeted_status { insert(rt) }
        }
    }

    /// `JSONDecoder` into the Codable model.
    public static func decode(_ bytes: Data) throws -> Tables {
        var tables = Tables()
        for status in try JSONDecoder().decode(Response.self, from: bytes).statuses { tables.insert(status) }
        return tables
    }

    /// `JSONSerialization` mapped by hand into the Codable model.
    public static func serialization(_ bytes: Data) throws -> Tables {
        guard let root = try JSONSerialization.jsonObject(with: bytes) as? [String: Any],
            let statuses = root["statuses"] as? [[String: Any]]
        else { throw SeedCodable.MappingError() }
        var tables = Tables()
        for s in statuses { tables.insert(try mapStatus(s)) }
        return tables
    }

    static func optionalString(_ v: Any?) -> String? { v as? String }
    static func optionalInt(_ v: Any?) -> Int? { (v as? NSNumber)?.intValue }

    static func mapUser(_ o: [String: Any]) throws -> User {
        typealias C = SeedCodable
        return User(
            id_str: try C.string(o["id_str"]), name: try C.string(o["name"]),
            screen_name: try C.string(o["screen_name"]), location: try C.string(o["location"]),
            description: try C.string(o["description"]), url: optionalString(o["url"]),
            followers_count: try C.int(o["followers_count"]), friends_count: try C.int(o["friends_count"]),
            listed_count: try C.int(o["listed_count"]), created_at: try C.string(o["created_at"]),
            favourites_count: try C.int(o["favourites_count"]), utc_offset: optionalInt(o["utc_offset"]),
            time_zone: optionalString(o["time_zone"]), verified: try C.bool(o["verified"]),
            statuses_count: try C.int(o["statuses_count"]), lang: try C.string(o["lang"]),
            profile_image_url: try C.string(o["profile_image_url"]), protected: try C.bool(o["protected"]))
    }

    static func mapStatus(_ o: [String: Any]) throws -> Status {
        typealias C = SeedCodable
        guard let user = o["user"] as? [String: Any], let entities = o["entities"] as? [String: Any],
            let mentions = entities["user_mentions"] as? [[String: Any]]
        else { throw C.MappingError() }
        return try Status(
            id_str: C.string(o["id_str"]), text: C.string(o["text"]), created_at: C.string(o["created_at"]),
            source: C.string(o["source"]), truncated: C.bool(o["truncated"]),
            in_reply_to_status_id_str: optionalString(o["in_reply_to_status_id_str"]),
            in_reply_to_user_id_str: optionalString(o["in_reply_to_user_id_str"]),
            in_reply_to_screen_name: optionalString(o["in_reply_to_screen_name"]), user: mapUser(user),
            retweet_count: C.int(o["retweet_count"]), favorite_count: C.int(o["favorite_count"]),
            favorited: C.bool(o["favorited"]), retweeted: C.bool(o["retweeted"]), lang: C.string(o["lang"]),
            entities: Entities(
                user_mentions: mentions.map {
                    Mention(
                        id_str: try C.string($0["id_str"]), name: try C.string($0["name"]),
                        screen_name: try C.string($0["screen_name"]))
                }),
            retweeted_status: (o["retweeted_status"] as? [String: Any]).map(mapStatus))
    }
}
