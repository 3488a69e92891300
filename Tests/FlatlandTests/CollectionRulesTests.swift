import Flatland
import FlatlandJSON
import FlatlandSQLite
import Testing

/// The ingest's rules for an endpoint's collection over time ("Collections over time").
@Suite("Collection rules")
struct CollectionRulesTests {
    static func page(_ offset: Int, _ ids: ClosedRange<Int>, total: Int) -> [UInt8] {
        let items = ids.map { #"{"uuid":"x-\#($0)","n":\#($0)}"# }.joined(separator: ",")
        return bytes(#"{"offset":\#(offset),"total":\#(total),"data":[\#(items)]}"#)
    }

    /// A response that selected fields (`?fields=name`) is a partial view: it updates its
    /// entities but leaves the endpoint's paged list as it is.
    @Test(arguments: StoreBackend.allCases) func aFieldSelectedListDoesNotWipeThePages(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(Self.page(0, 1...3, total: 6), endpoint: "/users?offset=0&count=3")
        try store.ingest(Self.page(3, 4...6, total: 6), endpoint: "/users?offset=3&count=3")
        let paged = try #require(store.collection(endpoint: "/users"))
        #expect(paged.items == (1...6).map { "x-\($0)" })
        let result = try store.ingest(
            bytes(#"[{"uuid":"x-2","name":"two"},{"uuid":"x-9","name":"nine"}]"#), endpoint: "/users?fields=name")
        #expect(store.collection(endpoint: "/users") == paged)
        #expect(result.endpointCollection == paged)
        #expect(store.record(id: "x-2")?.fields["name"] == "two")
        #expect(store.contains("x-9"))
        // Where the endpoint has no list yet, the partial view is its list.
        try store.ingest(bytes(#"[{"uuid":"x-1"}]"#), endpoint: "/fresh?fields=name")
        #expect(store.collection(endpoint: "/fresh")?.items == ["x-1"])
        // A list that selects no fields is the whole list: it replaces the pages.
        try store.ingest(bytes(#"[{"uuid":"x-5"}]"#), endpoint: "/users")
        #expect(store.collection(endpoint: "/users")?.items == ["x-5"])
        #expect(store.collection(endpoint: "/users")?.total == 1)
    }

    /// A later page with a smaller total drops the positions at and past it.
    @Test(arguments: StoreBackend.allCases) func aSmallerTotalDropsStalePositions(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(Self.page(0, 1...3, total: 6), endpoint: "/s?offset=0")
        try store.ingest(Self.page(3, 4...6, total: 6), endpoint: "/s?offset=3")
        let result = try store.ingest(Self.page(0, 1...3, total: 4), endpoint: "/s?offset=0")
        let collection = try #require(store.collection(endpoint: "/s"))
        #expect(collection.items == ["x-1", "x-2", "x-3", "x-4"])
        #expect(collection.total == 4)
        #expect(result.endpointCollection == collection)
        // A page that reaches past its own total keeps nothing past it either.
        try store.ingest(Self.page(1, 7...9, total: 2), endpoint: "/s?offset=1")
        #expect(store.collection(endpoint: "/s")?.items == ["x-1", "x-7"])
        // Total 0: the list is empty.
        try store.ingest(bytes(#"{"offset":0,"total":0,"data":[]}"#), endpoint: "/s?offset=0")
        #expect(store.collection(endpoint: "/s")?.items == [])
    }

    /// A malformed paging member of an object that turns out to be an entity is a field like any
    /// other, whatever the envelope and wherever its id comes.
    @Test(arguments: [Envelope.default, .results, .datasync])
    func pagingMembersOfAnEntityAreNotPaging(envelope: Envelope) throws {
        let store = Store()
        let options = IngestOptions(envelope: envelope)
        try store.ingest(
            bytes(#"{"count":"many","data":[],"results":[],"items":[],"offset":-1,"uuid":"x-1"}"#), endpoint: "/e",
            options: options)
        #expect(store.record(id: "x-1")?.fields["count"] == "many")
        #expect(store.collection(endpoint: "/e")?.items == ["x-1"])
    }

    /// `collection(endpoint:)` finds the endpoint's collection from any request of it.
    @Test(arguments: StoreBackend.allCases) func collectionByEndpoint(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(Self.page(0, 1...2, total: 2), endpoint: "/users/friends/?offset=0&count=2&gender=male")
        let collection = try #require(
            store.collection(endpoint: "/users/friends/?field=firstname,age&gender=male&offset=10&count=2"))
        #expect(collection.displayIdentifier == "/users/friends/?gender=male")
        #expect(store.snapshot().collection(endpoint: "/users/friends/?gender=male") == collection)
        #expect(store.collection(endpoint: "/users/friends/?gender=female") == nil)
    }
}

/// A typed entity with an untyped JSON field.
struct JSONNote: Entity, Equatable {
    static let prefix = "jn"
    var id: EntityID<JSONNote>
    var body: JSONValue?
    init(id: EntityID<JSONNote>) { self.id = id }
    static let fields: [Field<JSONNote>] = [Field("body", \.body)]
}

@Suite("Contracts")
struct ContractTests {
    /// A literal `{"$ref":…}` from a server is data, not a reference: it survives a round trip
    /// through SQLite unchanged, and a nested entity in the same field is its plain id, which
    /// resolves.
    @Test func aLiteralRefSurvivesSQLite() throws {
        let path = TemporaryFiles.newPath()
        let registry = try EntityRegistry([JSONNote.self, User.self])
        let body = #"{"literal":{"$ref":"x"},"deep":[{"$ref":"u-1"},{"$$ref":"y"}],"author":{"uuid":"u-1","age":4}}"#
        do {
            let persistence = try SQLitePersistence(path: path)
            let store = Store(registry: registry, persistence: persistence)
            try store.ingest(bytes(#"{"uuid":"jn-1","body":\#(body)}"#))
            #expect(store.entity(EntityID<JSONNote>("jn-1"))?.body == (try Self.expected()))
            persistence.close()
        }
        let reopened = Store(registry: registry, persistence: try SQLitePersistence(path: path))
        let note = try #require(reopened.entity(EntityID<JSONNote>("jn-1")))
        #expect(note.body == (try Self.expected()))
        // The nested entity is the plain id, and it resolves.
        guard case .object(let object) = note.body, case .string(let id) = object["author"] else {
            Issue.record("the author is not an id: \(String(describing: note.body))")
            return
        }
        #expect(reopened.entity(EntityID<User>(id))?.age == 4)
    }

    static func expected() throws -> JSONValue {
        try JSONValue(
            parsing: Array(#"{"literal":{"$ref":"x"},"deep":[{"$ref":"u-1"},{"$$ref":"y"}],"author":"u-1"}"#.utf8))
    }

    /// In an untyped record `{"$ref": id}` is always a reference: an object the server sent with
    /// `$ref` as its only key gets one more `$`.
    @Test(arguments: StoreBackend.allCases) func untypedRecordsEscapeLiteralRefs(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(bytes(#"{"uuid":"zz-1","a":{"$ref":"x"},"b":{"$$ref":"y"},"c":{"uuid":"zz-2"}}"#))
        let fields = try #require(store.record(id: "zz-1")?.fields)
        #expect(fields["a"] == ["$$ref": "x"])
        #expect(fields["b"] == ["$$$ref": "y"])
        #expect(fields["c"] == ["$ref": "zz-2"])
    }

    /// `missingFields(for:resolver:)` names the resolver's id key, not always `"uuid"`.
    @Test func missingFieldsNameTheResolversIDKey() throws {
        let store = Store(registry: try seedRegistry())
        let byID = IngestOptions(resolver: PrefixedIDResolver(key: "id"))
        try store.ingest(bytes(#"{"id":"u-1","firstname":"Ada"}"#), options: byID)
        let record = try #require(store.record(id: "u-1"))
        #expect(record.missingFields(for: ["id", "firstname", "email"], resolver: byID.resolver) == ["id", "email"])
        #expect(record.missingFields(for: ["firstname"], resolver: byID.resolver) == [])
        #expect(record.missingFields(for: ["email"]) == ["uuid", "email"])
        let rules = RuleResolver([.init(prefix: "u", idKey: "login")])
        #expect(record.missingFields(for: ["email", "login"], resolver: rules) == ["login", "email"])
        #expect(record.missingFields(for: ["email"], idKey: nil) == ["email"])
    }

    /// Under `skipAndReport` a parent never references a nested entity that was left out: the
    /// member (or the array element) is read as absent.
    @Test(arguments: StoreBackend.allCases, [false, true])
    func aSkippedNestedEntityIsNotReferenced(backend: StoreBackend, idLast: Bool) throws {
        let store = try backend.store(registry: try seedRegistry())
        let options = IngestOptions(badEntity: .skipAndReport)
        let members = [
            #""user":{"uuid":"u-1","age":"old"}"#,
            #""device":{"uuid":"d-1","name":"ok"}"#,
        ]
        let session =
            idLast
            ? "{\(members.joined(separator: ",")),\"uuid\":\"s-1\"}"
            : "{\"uuid\":\"s-1\",\(members.joined(separator: ","))}"
        let result = try store.ingest(
            bytes(
                #"[\#(session),{"uuid":"u-2","devices":[{"uuid":"d-2","name":7},{"uuid":"d-3"}],"friends":[{"uuid":"u-3","age":[]}]}]"#
            ), options: options)
        #expect(result.skipped.count == 3)
        #expect(!store.contains("u-1"))
        #expect(!store.contains("d-2"))
        #expect(!store.contains("u-3"))
        let stored = try #require(store.entity(EntityID<Session>("s-1")))
        #expect(stored.user == nil)
        #expect(stored.device == EntityID("d-1"))
        #expect(store.record(id: "s-1")?.presentFields == ["device"])
        let user = try #require(store.entity(EntityID<User>("u-2")))
        #expect(user.devices == [EntityID("d-3")])
        #expect(user.friends == [])
    }

    /// An object without a data version does not overwrite a versioned record: it only adds the
    /// fields the record lacks, and the version stays.
    @Test(arguments: StoreBackend.allCases) func anUnversionedObjectOnlyFillsAVersionedRecord(backend: StoreBackend)
        throws
    {
        let store = try backend.store(registry: try seedRegistry())
        let options = IngestOptions(versionKey: "rev")
        try store.ingest(bytes(#"{"uuid":"d-1","rev":2,"name":"new"}"#), options: options)
        let result = try store.ingest(bytes(#"{"uuid":"d-1","name":"stale","os":"ios"}"#), options: options)
        #expect(result.changes.updated == [ChangeSet.Update(id: "d-1", fields: ["os"])])
        #expect(store.entity(EntityID<Device>("d-1"))?.name == "new")
        #expect(store.entity(EntityID<Device>("d-1"))?.os == "ios")
        #expect(store.record(id: "d-1")?.dataVersion == 2)
        // Within one response as well, in either order.
        try store.ingest(
            bytes(#"[{"uuid":"d-2","rev":1,"name":"a"},{"uuid":"d-2","name":"b","model":"m"}]"#), options: options)
        #expect(store.entity(EntityID<Device>("d-2"))?.name == "a")
        #expect(store.entity(EntityID<Device>("d-2"))?.model == "m")
        // A newer version still overwrites.
        try store.ingest(bytes(#"{"uuid":"d-1","rev":3,"name":"newer"}"#), options: options)
        #expect(store.entity(EntityID<Device>("d-1"))?.name == "newer")
        // Untyped records follow the same rule.
        try store.ingest(bytes(#"{"uuid":"zz-1","rev":5,"a":1}"#), options: options)
        try store.ingest(bytes(#"{"uuid":"zz-1","a":2,"b":3}"#), options: options)
        #expect(store.record(id: "zz-1")?.fields == ["rev": 5, "a": 1, "b": 3])
    }
}
