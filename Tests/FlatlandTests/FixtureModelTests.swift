import Flatland
import FlatlandFixtures
import Foundation
import Testing

/// The benchmark's Codable models count entities as the store does, so that per-entity figures
/// compare like with like.
@Suite struct FixtureModelTests {
    static func user(_ id: String) -> String {
        #"{"id_str":"\#(id)","name":"N\#(id)","screen_name":"s\#(id)","location":"","description":"","url":null,"#
            + #""followers_count":1,"friends_count":2,"listed_count":3,"created_at":"Mon Sep 24 03:35:21 +0000 2012","#
            + #""favourites_count":4,"utc_offset":null,"time_zone":null,"verified":false,"statuses_count":5,"#
            + #""lang":"en","profile_image_url":"http://x/\#(id).png","protected":false}"#
    }

    static func status(_ id: String, by user: String, mentioning mentions: [String]) -> String {
        let m = mentions.map { #"{"id_str":"\#($0)","name":"N\#($0)","screen_name":"s\#($0)"}"# }
        return #"{"id_str":"\#(id)","text":"t","created_at":"Sun Aug 31 00:29:15 +0000 2014","source":"web","#
            + #""truncated":false,"in_reply_to_status_id_str":null,"in_reply_to_user_id_str":null,"#
            + #""in_reply_to_screen_name":null,"user":\#(Self.user(user)),"retweet_count":0,"favorite_count":0,"#
            + #""favorited":false,"retweeted":false,"lang":"en","entities":{"user_mentions":[\#(m.joined(separator: ","))]}}"#
    }

    /// A user mentioned before their own status is one user, in both.
    @Test func twitterCountsEachUserOnce() throws {
        let json =
            #"{"statuses":["# + Self.status("1", by: "10", mentioning: ["11", "12"]) + ","
            + Self.status("2", by: "11", mentioning: ["10"]) + "]}"
        let tables = try Twitter.decode(Data(json.utf8))
        #expect(tables.count == 5, "2 statuses, users 10, 11 and 12")
        let store = Store(registry: Twitter.registry())
        try store.ingest(Array(json.utf8), options: IngestOptions(resolver: Twitter.resolver))
        #expect(store.count == tables.count)
        #expect(try Twitter.serialization(Data(json.utf8)).count == tables.count)
    }
}
