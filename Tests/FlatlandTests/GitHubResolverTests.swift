import Flatland
import FlatlandJSON
import Foundation
import Testing

/// GitHub's events API, declared as an SDK would: ids are numbers or numeric strings, the type
/// comes from the `type` member or from the key an object sits under.
struct GHEvent: Entity, Equatable {
    static let prefix = "ev"
    var id: EntityID<GHEvent>
    var eventID = ""
    var type = ""
    var actor: EntityID<GHUser>? = nil
    var repo: EntityID<GHRepo>? = nil
    var org: EntityID<GHOrg>? = nil
    var payload: JSONValue = .null
    var isPublic = false
    var createdAt: Date? = nil
    init(id: EntityID<GHEvent>) { self.id = id }
    static let fields: [Field<GHEvent>] = [
        Field("id", \.eventID), Field("type", \.type), Field("actor", \.actor), Field("repo", \.repo),
        Field("org", \.org), Field("payload", \.payload), Field("public", \.isPublic),
        Field("created_at", \.createdAt),
    ]
}

struct GHUser: Entity, Equatable {
    static let prefix = "gu"
    var id: EntityID<GHUser>
    var number = 0
    var login = ""
    var avatarURL: URL? = nil
    init(id: EntityID<GHUser>) { self.id = id }
    static let fields: [Field<GHUser>] = [
        Field("id", \.number), Field("login", \.login), Field("avatar_url", \.avatarURL),
    ]
}

struct GHRepo: Entity, Equatable {
    static let prefix = "gr"
    var id: EntityID<GHRepo>
    var number: Int64 = 0
    var name = ""
    init(id: EntityID<GHRepo>) { self.id = id }
    static let fields: [Field<GHRepo>] = [Field("id", \.number), Field("name", \.name)]
}

struct GHOrg: Entity, Equatable {
    static let prefix = "go"
    var id: EntityID<GHOrg>
    var number = 0
    var login = ""
    init(id: EntityID<GHOrg>) { self.id = id }
    static let fields: [Field<GHOrg>] = [Field("id", \.number), Field("login", \.login)]
}

@Suite("A GitHub-shaped resolver")
struct GitHubResolverTests {
    static let resolver = RuleResolver([
        .init(prefix: "ev", idKey: "id", typeKey: "type", typeSuffix: "Event"),
        .init(prefix: "gu", idKey: "id", parentKeys: ["actor"]),
        .init(prefix: "gr", idKey: "id", parentKeys: ["repo"]),
        .init(prefix: "go", idKey: "id", parentKeys: ["org"]),
    ])

    struct Actor {
        var id: Int
        var login: String
    }

    static let actors = [Actor(id: 583231, login: "octocat"), Actor(id: 1, login: "mojombo")]
    static let repos = [
        (id: 1_296_269 as Int64, name: "octocat/Hello-World"), (id: 9_007_199_254_740_993, name: "big/id"),
    ]

    /// `count` events; event `i` is by actor `i % 2`, in repo `i % 2`; even events have an org;
    /// members come in varying order, some with `type` after nested objects.
    static func events(count: Int) -> (text: String, ids: [String]) {
        var items: [String] = []
        var ids: [String] = []
        for i in 0..<count {
            let eventID = String(22_249_084_947 + i)
            let actor = actors[i % 2]
            let repo = repos[i % 2]
            let type = ["PushEvent", "WatchEvent", "PullRequestEvent"][i % 3]
            let actorJSON =
                #"{"id":\#(actor.id),"login":"\#(actor.login)","display_login":"\#(actor.login)","avatar_url":"https://avatars.githubusercontent.com/u/\#(actor.id)?"}"#
            let repoJSON =
                #"{"id":\#(repo.id),"name":"\#(repo.name)","url":"https://api.github.com/repos/\#(repo.name)"}"#
            let payload =
                #"{"push_id":\#(10_000 + i),"size":1,"commits":[{"sha":"abc\#(i)","author":{"email":"a@b.c","name":"A"},"message":"m\#(i)"}],"pull_request":{"id":\#(900 + i),"number":\#(i)}}"#
            let org = i % 2 == 0 ? #","org":{"id":9919,"login":"github"}"# : ""
            if i % 2 == 0 {
                items.append(
                    #"{"id":"\#(eventID)","type":"\#(type)","actor":\#(actorJSON),"repo":\#(repoJSON),"payload":\#(payload),"public":true,"created_at":"2022-06-09T12:47:28Z"\#(org)}"#
                )
            } else {
                items.append(
                    #"{"actor":\#(actorJSON),"payload":\#(payload),"repo":\#(repoJSON),"public":false,"created_at":"2022-06-09T12:47:28Z","type":"\#(type)","id":"\#(eventID)"}"#
                )
            }
            ids.append("ev-\(eventID)")
        }
        return ("[\n" + items.joined(separator: ",\n") + "\n]", ids)
    }

    static func makeStore(_ backend: StoreBackend) throws -> Store {
        try backend.store(registry: try EntityRegistry([GHEvent.self, GHUser.self, GHRepo.self, GHOrg.self]))
    }

    static var options: IngestOptions { IngestOptions(resolver: resolver) }

    @Test(arguments: StoreBackend.allCases, [1, 13, Int.max])
    func eventsNormalizeActorsReposAndOrgs(backend: StoreBackend, chunkSize: Int) throws {
        let store = try Self.makeStore(backend)
        let fixture = Self.events(count: 6)
        let result = try ingestChunked(
            store, bytes(fixture.text), chunkSize: chunkSize, endpoint: "/events?per_page=6", options: Self.options)
        // Six events; two actors and two repos shared between them, stored once each; one org.
        #expect(store.count(prefix: "ev") == 6)
        #expect(store.ids(prefix: "gu") == Self.actors.map { "gu-\($0.id)" }.sorted())
        #expect(store.ids(prefix: "gr") == Self.repos.map { "gr-\($0.id)" }.sorted())
        #expect(store.ids(prefix: "go") == ["go-9919"])
        #expect(store.count == 11)
        #expect(result.taskCollection.items == fixture.ids)
        #expect(result.endpointCollection?.items == fixture.ids)
        #expect(result.endpointCollection?.displayIdentifier == "/events")

        for (i, id) in fixture.ids.enumerated() {
            let event = try #require(store.entity(EntityID<GHEvent>(id)))
            #expect(event.eventID == String(id.dropFirst(3)))
            #expect(event.type.hasSuffix("Event"))
            #expect(event.actor == EntityID("gu-\(Self.actors[i % 2].id)"))
            #expect(event.repo == EntityID("gr-\(Self.repos[i % 2].id)"))
            #expect(event.org == (i % 2 == 0 ? EntityID("go-9919") : nil))
            #expect(event.isPublic == (i % 2 == 0))
            // Objects in the payload that match no rule stay plain JSON.
            #expect(event.payload["pull_request"]?["id"] == .number(JSONNumber(900 + i)))
            #expect(event.payload["commits"]?[0]?["author"]?["name"] == "A")
            #expect(event.createdAt == Date(timeIntervalSince1970: 1_654_778_848))
        }
        for actor in Self.actors {
            let user = try #require(store.entity(EntityID<GHUser>("gu-\(actor.id)")))
            #expect(user.number == actor.id)
            #expect(user.login == actor.login)
            #expect(user.avatarURL?.absoluteString == "https://avatars.githubusercontent.com/u/\(actor.id)?")
        }
        // Numeric ids keep their exact text, even past 2^53.
        #expect(store.entity(EntityID<GHRepo>("gr-9007199254740993"))?.number == 9_007_199_254_740_993)
        #expect(store.entity(EntityID<GHOrg>("go-9919"))?.login == "github")
    }

    @Test(arguments: StoreBackend.allCases) func withoutTypesEverythingIsUntypedWithReferences(backend: StoreBackend)
        throws
    {
        let store = try backend.store()
        let fixture = Self.events(count: 2)
        try store.ingest(bytes(fixture.text), options: Self.options)
        let event = try #require(store.record(id: fixture.ids[1]))
        #expect(event.fields["actor"] == ["$ref": .string("gu-\(Self.actors[1].id)")])
        #expect(event.fields["repo"] == ["$ref": .string("gr-\(Self.repos[1].id)")])
        #expect(event.fields["id"] == .string(String(fixture.ids[1].dropFirst(3))))
        #expect(store.record(id: "gu-1")?.fields["login"] == "mojombo")
        #expect(store.record(id: "gu-1")?.fields["id"] == 1)
    }

    @Test(arguments: StoreBackend.allCases) func objectsThatMatchNoRuleAreNotEntities(backend: StoreBackend) throws {
        let store = try Self.makeStore(backend)
        try store.ingest(
            bytes(
                #"[{"id":"1","type":"Push","actor":{"id":2}},{"id":"3","type":"WatchEvent","member":{"id":4},"payload":{"actor":{"login":"x"}}}]"#
            ), options: Self.options)
        // The first is not an event (no "Event" suffix) but its actor still is a user; the
        // second's member sits under no known key and the actor in its payload has no id.
        #expect(store.allIDs() == ["ev-3", "gu-2"])
        #expect(store.entity(EntityID<GHEvent>("ev-3"))?.eventID == "3")
    }
}
