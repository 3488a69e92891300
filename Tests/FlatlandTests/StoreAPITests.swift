import Flatland
import FlatlandJSON
import Testing

@Suite("Store API")
struct StoreAPITests {
    @Test(arguments: StoreBackend.allCases) func entityContainsUpsertRemove(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        var user = User(id: EntityID("u-b"))
        user.firstname = "B"
        #expect(!store.contains(user.id))
        #expect(store.entity(user.id) == nil)
        let inserted = try store.upsert(user)
        #expect(inserted.inserted == ["u-b"])
        #expect(store.contains(user.id))
        #expect(store.contains("u-b"))
        #expect(store.entity(user.id) == user)
        #expect(store.record(user.id)?.presentFields == User.fields.map(\.key))
        user.age = 4
        let updated = try store.upsert(user)
        #expect(updated.updated == [ChangeSet.Update(id: "u-b", fields: ["age"])])
        #expect(store.entity(user.id)?.age == 4)
        // A record of another type under the same id string is not a User.
        #expect(store.entity(EntityID<Device>("u-b")) == nil)
        let removed = try store.remove(user.id)
        #expect(removed.removed == ["u-b"])
        #expect(!store.contains(user.id))
        #expect(try store.remove(user.id).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases) func upsertOfAnUnregisteredTypeFails(backend: StoreBackend) throws {
        let store = try backend.store(registry: try EntityRegistry([Device.self]))
        #expect(throws: (any Error).self) { try store.upsert(User(id: EntityID("u-1"))) }
        #expect(store.count == 0)
    }

    @Test(arguments: StoreBackend.allCases) func allOfATypeSortedAndCounts(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        for raw in ["u-c", "u-a", "u-b"] { try store.upsert(User(id: EntityID(raw))) }
        try store.ingest(bytes(#"[{"uuid":"d-2"},{"uuid":"d-1"},{"uuid":"x-1"},{"uuid":"s-1","user":"u-a"}]"#))
        #expect(store.all(User.self).map(\.id.rawValue) == ["u-a", "u-b", "u-c"])
        #expect(store.all(Device.self).map(\.id.rawValue) == ["d-1", "d-2"])
        #expect(store.all(Session.self).first?.user == EntityID("u-a"))
        #expect(store.count == 7)
        #expect(store.count(prefix: "u") == 3)
        #expect(store.count(prefix: "zz") == 0)
        #expect(store.countsByPrefix == ["u": 3, "d": 2, "x": 1, "s": 1])
        #expect(store.ids(prefix: "d") == ["d-1", "d-2"])
        #expect(store.allIDs() == ["d-1", "d-2", "s-1", "u-a", "u-b", "u-c", "x-1"])
        try store.remove(["u-a", "x-1", "nope-1"])
        #expect(store.countsByPrefix == ["u": 2, "d": 2, "s": 1])
        try store.removeAll()
        #expect(store.count == 0)
        #expect(store.collections.isEmpty)
    }

    @Test(arguments: StoreBackend.allCases) func secondaryIndexLookup(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(
            bytes(
                #"[{"uuid":"u-2","email":"a@x"},{"uuid":"u-1","email":"a@x"},{"uuid":"u-3","email":"b@x"},{"uuid":"u-4"}]"#
            ))
        #expect(try store.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-1", "u-2"])
        #expect(try store.entities(where: \User.email, equals: "b@x").map(\.id.rawValue) == ["u-3"])
        #expect(try store.entities(where: \User.email, equals: nil).map(\.id.rawValue) == ["u-4"])
        // A changed value moves the record in the index; a removed record leaves it.
        try store.ingest(bytes(#"{"uuid":"u-2","email":"b@x"}"#))
        #expect(try store.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-1"])
        #expect(try store.entities(where: \User.email, equals: "b@x").map(\.id.rawValue) == ["u-2", "u-3"])
        try store.remove(EntityID<User>("u-3"))
        #expect(try store.entities(where: \User.email, equals: "b@x").map(\.id.rawValue) == ["u-2"])
        #expect(try store.snapshot().entities(where: \User.email, equals: "a@x").count == 1)
    }

    /// Two indexes on one type, beside another indexed type: the first response into an empty
    /// store fills every index at once; later responses move records between values.
    @Test(arguments: StoreBackend.allCases) func severalIndexedTypesInTheFirstResponse(backend: StoreBackend) throws {
        let store = try backend.store(registry: try EntityRegistry([User.self, Handset.self]))
        var items: [String] = []
        for i in 0..<60 {
            items.append(#"{"uuid":"u-\#(i)","email":"m\#(i % 7)@x"}"#)
            items.append(#"{"uuid":"h-\#(i)","model":"model \#(i % 5)","os":"os \#(i % 3)"}"#)
        }
        try store.ingest(bytes("[" + items.joined(separator: ",") + "]"))
        func ids<E: Entity>(_ entities: [E]) -> [String] { entities.map(\.id.description) }
        func expected(_ prefix: String, _ matches: (Int) -> Bool) -> [String] {
            (0..<60).filter(matches).map { "\(prefix)-\($0)" }.sorted()
        }
        #expect(try ids(store.entities(where: \User.email, equals: "m3@x")) == expected("u") { $0 % 7 == 3 })
        #expect(try ids(store.entities(where: \Handset.model, equals: "model 4")) == expected("h") { $0 % 5 == 4 })
        #expect(try ids(store.entities(where: \Handset.os, equals: "os 0")) == expected("h") { $0 % 3 == 0 })
        try store.ingest(bytes(#"[{"uuid":"h-0","os":"os 1"},{"uuid":"u-3","email":"m0@x"}]"#))
        #expect(try ids(store.entities(where: \Handset.os, equals: "os 0")) == expected("h") { $0 % 3 == 0 && $0 != 0 })
        #expect(try ids(store.entities(where: \Handset.os, equals: "os 1")) == expected("h") { $0 % 3 == 1 || $0 == 0 })
        #expect(try ids(store.entities(where: \Handset.model, equals: "model 0")) == expected("h") { $0 % 5 == 0 })
        #expect(try ids(store.entities(where: \User.email, equals: "m3@x")) == expected("u") { $0 % 7 == 3 && $0 != 3 })
        #expect(try ids(store.entities(where: \User.email, equals: "m0@x")) == expected("u") { $0 % 7 == 0 || $0 == 3 })
    }

    /// Indexed strings are the same value when their bytes are, in memory as in SQL: text that
    /// Unicode calls equivalent but that is spelled with other bytes is another value.
    @Test(arguments: StoreBackend.allCases) func indexedStringsMatchByTheirBytes(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(
            bytes(#"[{"uuid":"u-1","email":"zo\u00eb@x"},{"uuid":"u-2","email":"zoe\u0308@x"},{"uuid":"u-3"}]"#))
        #expect("zo\u{EB}@x" == "zoe\u{308}@x", "Swift's String calls them equal")
        #expect(try store.entities(where: \User.email, equals: "zo\u{EB}@x").map(\.id.rawValue) == ["u-1"])
        #expect(try store.entities(where: \User.email, equals: "zoe\u{308}@x").map(\.id.rawValue) == ["u-2"])
        #expect(try store.entities(where: \User.email, equals: "zoe@x").isEmpty)
        // Moving a record between the two keeps them apart.
        try store.ingest(bytes(#"{"uuid":"u-3","email":"zo\u00eb@x"}"#))
        #expect(try store.entities(where: \User.email, equals: "zo\u{EB}@x").map(\.id.rawValue) == ["u-1", "u-3"])
        #expect(try store.snapshot().entities(where: \User.email, equals: "zoe\u{308}@x").map(\.id.rawValue) == ["u-2"])
    }

    /// The first response into an empty in-memory store becomes its records wholesale; what
    /// follows must behave exactly as it does for a store that already held records.
    @Test(arguments: StoreBackend.allCases) func firstResponseIntoAnEmptyStoreAndAfter(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let ingestor = store.makeIngestor(endpoint: "/users")
        try ingestor.feed(
            bytes(
                #"[{"uuid":"u-2","email":"a@x","devices":[{"uuid":"d-1","name":"n"}]},{"uuid":"u-1","email":"b@x"},"#
                    + #"{"uuid":"u-2","firstname":"Again"}]"#))
        let first = try store.commit(ingestor.finish())
        #expect(first.changes.inserted == ["d-1", "u-2", "u-1"])
        let before = store.snapshot()
        #expect(store.ids(prefix: "u") == ["u-1", "u-2"])
        #expect(store.entity(EntityID<User>("u-2"))?.firstname == "Again")
        #expect(store.entity(EntityID<User>("u-2"))?.devices == [EntityID("d-1")])
        #expect(try store.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-2"])

        let second = try store.ingest(bytes(#"[{"uuid":"u-2","email":"c@x"},{"uuid":"u-3"}]"#))
        #expect(second.changes.inserted == ["u-3"])
        #expect(second.changes.updated == [ChangeSet.Update(id: "u-2", fields: ["email"])])
        #expect(store.ids(prefix: "u") == ["u-1", "u-2", "u-3"])
        #expect(store.count(prefix: "d") == 1)
        #expect(try store.entities(where: \User.email, equals: "a@x").isEmpty)
        #expect(try store.entities(where: \User.email, equals: "c@x").map(\.id.rawValue) == ["u-2"])
        #expect(store.entity(EntityID<User>("u-2"))?.firstname == "Again")
        // The snapshot taken in between still sees the first response only.
        #expect(before.ids(prefix: "u") == ["u-1", "u-2"])
        #expect(before.entity(EntityID<User>("u-2"))?.email == "a@x")
        #expect(try before.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-2"])
    }

    /// The first response into an empty store indexes each entity as it ends; a later object for
    /// the same id that changes the indexed value (decoded into the same draft, or folded into it
    /// where each object is judged on its own) must leave the index with the final value only.
    @Test(arguments: [IngestOptions.BadEntityPolicy.failResponse, .skipAndReport])
    func indexedValueChangedLaterInTheFirstResponse(policy: IngestOptions.BadEntityPolicy) throws {
        let store = Store(registry: try seedRegistry())
        try store.ingest(
            bytes(
                #"[{"uuid":"u-1","email":"a@x"},{"uuid":"u-2","email":"a@x"},{"uuid":"s-1","user":{"uuid":"u-1","email":"b@x"}},"#
                    + #"{"uuid":"u-3","email":"c@x"}]"#), options: IngestOptions(badEntity: policy))
        #expect(try store.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-2"])
        #expect(try store.entities(where: \User.email, equals: "b@x").map(\.id.rawValue) == ["u-1"])
        #expect(try store.entities(where: \User.email, equals: "c@x").map(\.id.rawValue) == ["u-3"])
    }

    /// An ingestor that begins on an empty store, where another write lands before it finishes:
    /// its response is merged record by record, not taken wholesale; and one that begins on a
    /// store emptied before it finishes.
    @Test(arguments: StoreBackend.allCases) func writesBetweenAnIngestorsStartAndFinish(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let ingestor = store.makeIngestor()
        try ingestor.feed(bytes(#"[{"uuid":"u-1","email":"a@x","age":1},{"uuid":"d-1","name":"n"}]"#))
        var other = User(id: EntityID("u-1"))
        other.email = "b@x"
        try store.upsert(other)
        try store.upsert(User(id: EntityID("u-2")))
        let result = try store.commit(ingestor.finish())
        #expect(result.changes.inserted == ["d-1"])
        #expect(result.changes.updated == [ChangeSet.Update(id: "u-1", fields: ["email", "age"])])
        #expect(store.countsByPrefix == ["u": 2, "d": 1])
        #expect(try store.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-1"])
        #expect(try store.entities(where: \User.email, equals: "b@x").isEmpty)

        let late = store.makeIngestor()
        try late.feed(bytes(#"[{"uuid":"u-3","email":"c@x"}]"#))
        try store.removeAll()
        #expect(try store.commit(late.finish()).changes.inserted == ["u-3"])
        #expect(store.countsByPrefix == ["u": 1])
        #expect(try store.entities(where: \User.email, equals: "c@x").map(\.id.rawValue) == ["u-3"])
    }

    @Test(arguments: StoreBackend.allCases) func twoStoresNeverShareData(backend: StoreBackend) throws {
        let a = try backend.store(registry: try seedRegistry())
        let b = try backend.store(registry: try seedRegistry())
        try a.ingest(bytes(#"{"uuid":"u-1","firstname":"A"}"#), endpoint: "/me")
        #expect(b.count == 0)
        #expect(b.collections.isEmpty)
        try b.ingest(bytes(#"{"uuid":"u-1","firstname":"B"}"#), endpoint: "/me")
        #expect(a.entity(EntityID<User>("u-1"))?.firstname == "A")
        #expect(b.entity(EntityID<User>("u-1"))?.firstname == "B")
        try a.removeAll()
        #expect(b.count == 1)
        #expect(b.collection(displayIdentifier: "/me")?.items == ["u-1"])
    }

    @Test(arguments: StoreBackend.allCases) func snapshotsDoNotChangeWithLaterWrites(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","age":1}"#))
        let snapshot = store.snapshot()
        try store.ingest(bytes(#"[{"uuid":"u-1","age":2},{"uuid":"u-2"}]"#))
        #expect(snapshot.entity(EntityID<User>("u-1"))?.age == 1)
        #expect(snapshot.count == 1)
        #expect(store.count == 2)
    }

    @Test(arguments: StoreBackend.allCases) func unknownPrefixesAreUntypedByDefault(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"zz-1","a":[1,"two",null],"u":{"uuid":"u-1","age":3}}"#))
        let record = try #require(store.record(id: "zz-1"))
        guard case .untyped(let fields) = record.payload else {
            Issue.record("not untyped")
            return
        }
        #expect(fields == ["a": [1, "two", nil], "u": ["$ref": "u-1"]])
        #expect(record.prefix == "zz")
        #expect(store.entity(EntityID<User>("u-1"))?.age == 3)
    }

    @Test(arguments: StoreBackend.allCases) func unknownPrefixesCanBeIgnored(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        var options = IngestOptions()
        options.unknownPrefix = .ignore
        let result = try store.ingest(
            bytes(#"[{"uuid":"zz-1","a":1,"u":{"uuid":"u-1","age":3}},{"uuid":"u-2"}]"#), options: options)
        #expect(store.allIDs() == ["u-1", "u-2"])
        #expect(result.taskCollection.items == ["u-1", "u-2"])
    }

    @Test(arguments: StoreBackend.allCases) func unknownPrefixesCanFailTheResponse(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-9"}"#))
        let before = fingerprint(store)
        var options = IngestOptions()
        options.unknownPrefix = .fail
        let error = #expect(throws: IngestError.self) {
            try store.ingest(bytes(#"{"data":[{"uuid":"u-1"},{"uuid":"zz-1","a":1}]}"#), options: options)
        }
        #expect(error?.code == .unknownPrefix)
        #expect(error?.path == "$.data[1]")
        #expect(error?.message.contains("zz-1") == true)
        #expect(fingerprint(store) == before)
    }
}

/// A type with two indexes.
struct Handset: Entity, Equatable {
    static let prefix = "h"
    var id: EntityID<Handset>
    var model = ""
    var os = ""
    init(id: EntityID<Handset>) { self.id = id }
    static let fields: [Field<Handset>] = [Field("model", \.model), Field("os", \.os)]
    static let indexes: [EntityIndex<Handset>] = [EntityIndex("model", \.model), EntityIndex("os", \.os)]
}
