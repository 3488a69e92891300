import Flatland
import FlatlandJSON
import Testing

@Suite("Nested normalization")
struct NormalizationTests {
    @Test(arguments: StoreBackend.allCases) func typedEntitiesInsideEntitiesAndArrays(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let result = try store.ingest(
            bytes(
                #"""
                {"uuid":"s-1","created":"2024-01-01T00:00:00.000Z",
                 "user":{"uuid":"u-1","firstname":"Ada","address":{"city":"London","zip":"N1"},
                   "devices":[{"uuid":"d-1","name":"phone"},"d-2"],
                   "friends":[{"uuid":"u-2","friends":[{"uuid":"u-3","firstname":"Deep",
                     "devices":[{"uuid":"d-3","name":"five levels down"}]}]}]},
                 "device":{"name":"tablet","uuid":"d-9"}}
                """#))
        let session = try #require(store.entity(EntityID<Session>("s-1")))
        #expect(session.user == EntityID("u-1"))
        #expect(session.device == EntityID("d-9"))
        let user = try #require(store.entity(EntityID<User>("u-1")))
        #expect(user.devices == [EntityID("d-1"), EntityID("d-2")])
        #expect(user.friends == [EntityID("u-2")])
        #expect(user.address?.city == "London")
        #expect(store.entity(EntityID<User>("u-2"))?.friends == [EntityID("u-3")])
        #expect(store.entity(EntityID<User>("u-3"))?.devices == [EntityID("d-3")])
        #expect(store.entity(EntityID<Device>("d-3"))?.name == "five levels down")
        #expect(store.entity(EntityID<Device>("d-9"))?.name == "tablet")
        // d-2 was only a reference: no record is made up for it.
        #expect(!store.contains("d-2"))
        #expect(result.taskCollection.items == ["s-1"])
        #expect(Set(result.changes.inserted) == ["s-1", "u-1", "u-2", "u-3", "d-1", "d-3", "d-9"])
    }

    /// A parent's id field holds the nested entity's own id string, not a second copy of its
    /// bytes: whether it is a field's single value or an element of a recorded array.
    @Test func idFieldsShareTheNestedEntitysIDString() throws {
        let store = Store(registry: try seedRegistry())
        let user = "u-" + String(repeating: "U", count: 30)
        let devices = ["d-" + String(repeating: "A", count: 30), "d-" + String(repeating: "B", count: 30)]
        try store.ingest(
            bytes(
                """
                {"uuid":"s-1","user":{"uuid":"\(user)","devices":[{"uuid":"\(devices[0])"},"\(devices[1])"]}}
                """))
        func storage(_ string: String) -> UnsafeRawPointer? {
            var string = string
            return string.withUTF8 { UnsafeRawPointer($0.baseAddress) }
        }
        let session = try #require(store.entity(EntityID<Session>("s-1")))
        let stored = try #require(store.entity(EntityID<User>(user)))
        #expect(session.user == stored.id)
        #expect(storage(try #require(session.user).rawValue) == storage(stored.id.rawValue))
        let device = try #require(store.entity(EntityID<Device>(devices[0])))
        #expect(stored.devices == [device.id, EntityID(devices[1])])
        #expect(storage(stored.devices[0].rawValue) == storage(device.id.rawValue))
        // A plain id string is decoded from its bytes: nothing to share.
        #expect(stored.devices[1].rawValue == devices[1])
    }

    @Test(arguments: StoreBackend.allCases) func entitiesUnderUnknownKeysOfTypedEntitiesAreStored(backend: StoreBackend)
        throws
    {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(
            bytes(
                #"""
                [{"uuid":"u-1","meta":{"deep":[{"x":{"uuid":"d-9","name":"n"}}]},"firstname":"A",
                  "more":[[{"uuid":"u-7","age":7}]],"flag":true}]
                """#))
        #expect(store.entity(EntityID<Device>("d-9"))?.name == "n")
        #expect(store.entity(EntityID<User>("u-7"))?.age == 7)
        #expect(store.entity(EntityID<User>("u-1"))?.firstname == "A")
        #expect(store.record(id: "u-1")?.presentFields == ["firstname"])
    }

    @Test(arguments: StoreBackend.allCases) func untypedParentsHoldReferencesAtAnyDepth(backend: StoreBackend) throws {
        let store = try backend.store()
        let result = try store.ingest(
            bytes(
                #"""
                {"envelope":{"items":[{"uuid":"a-1","l1":{"l2":[{"l3":{"uuid":"b-1","l4":[[{"l5":{"uuid":"c-1",
                  "l6":{"uuid":"e-1","leaf":true},"n":1}}]]}}]},"tail":"t"}]}}
                """#))
        #expect(store.allIDs() == ["a-1", "b-1", "c-1", "e-1"])
        #expect(
            canonical(.object(try #require(store.record(id: "a-1")).fields))
                == (try json(#"{"l1":{"l2":[{"l3":{"$ref":"b-1"}}]},"tail":"t"}"#)))
        #expect(
            canonical(.object(try #require(store.record(id: "b-1")).fields))
                == (try json(#"{"l4":[[{"l5":{"$ref":"c-1"}}]]}"#)))
        #expect(
            canonical(.object(try #require(store.record(id: "c-1")).fields))
                == (try json(#"{"l6":{"$ref":"e-1"},"n":1}"#)))
        #expect(store.record(id: "e-1")?.fields == ["leaf": true])
        #expect(result.taskCollection.items == ["a-1"])
    }

    /// The same document with the identity first and last in every object: the store must end
    /// up the same, whatever comes before the identity and however the bytes are split.
    static let identityLastCases: [(first: String, last: String)] = [
        (#"{"uuid":"u-1","age":3}"#, #"{"age":3,"uuid":"u-1"}"#),
        (
            #"{"uuid":"u-1","tags":["a","b"],"address":{"city":"X"},"firstname":"F"}"#,
            #"{"tags":["a","b"],"address":{"city":"X"},"firstname":"F","uuid":"u-1"}"#
        ),
        (
            #"[{"uuid":"u-1","friends":[{"uuid":"u-2","age":2},{"uuid":"u-3","devices":[{"uuid":"d-1","name":"n"}]}]}]"#,
            #"[{"friends":[{"age":2,"uuid":"u-2"},{"devices":[{"name":"n","uuid":"d-1"}],"uuid":"u-3"}],"uuid":"u-1"}]"#
        ),
        (
            #"{"uuid":"s-1","user":{"uuid":"u-1","extra":{"a":[{"b":{"uuid":"d-5"}}]},"age":1},"device":{"uuid":"d-1"}}"#,
            #"{"user":{"extra":{"a":[{"b":{"uuid":"d-5"}}]},"age":1,"uuid":"u-1"},"device":{"uuid":"d-1"},"uuid":"s-1"}"#
        ),
        (
            #"{"data":[{"uuid":"x-1","nested":[[{"k":{"uuid":"y-1","z":[1,{"w":null}]}}]],"s":"t"}],"offset":0}"#,
            #"{"data":[{"nested":[[{"k":{"z":[1,{"w":null}],"uuid":"y-1"}}]],"s":"t","uuid":"x-1"}],"offset":0}"#
        ),
    ]

    @Test(arguments: identityLastCases, StoreBackend.each([1, 3, 1 << 20]))
    func identityKeyLastGivesTheSameStore(documents: (first: String, last: String), setup: (StoreBackend, Int)) throws {
        let (backend, chunkSize) = setup
        let a = try backend.store(registry: try seedRegistry())
        let b = try backend.store(registry: try seedRegistry())
        let ra = try ingestChunked(a, bytes(documents.first), chunkSize: chunkSize, endpoint: "/e")
        let rb = try ingestChunked(b, bytes(documents.last), chunkSize: chunkSize, endpoint: "/e")
        #expect(a.count > 0)
        #expect(ra.taskCollection.items == rb.taskCollection.items)
        #expect(ra.endpointCollection?.items == rb.endpointCollection?.items)
        #expect(a.allIDs() == b.allIDs())
        for id in a.allIDs() {
            let fa = try #require(a.record(id: id)).fields
            let fb = try #require(b.record(id: id)).fields
            #expect(canonical(.object(fa)) == canonical(.object(fb)), "\(id)")
        }
    }

    @Test(arguments: StoreBackend.allCases) func identityLastPastThePendingLimitIsAContainer(backend: StoreBackend)
        throws
    {
        let store = try backend.store()
        var options = IngestOptions()
        options.maxPendingObjectBytes = 64
        let padding = String(repeating: "p", count: 200)
        try store.ingest(bytes(#"{"pad":"\#(padding)","inner":{"uuid":"x-2"},"uuid":"x-1"}"#), options: options)
        #expect(store.allIDs() == ["x-2"])
        try store.ingest(bytes(#"{"uuid":"x-3","pad":"\#(padding)"}"#), options: options)
        #expect(store.record(id: "x-3")?.fields["pad"] == .string(padding))
    }

    /// Wherever the pending limit cuts a buffered value (an opening bracket, a key, the identity
    /// itself), an entity whose identity came first keeps every field and the walk stays in step.
    @Test(arguments: StoreBackend.allCases, [16, 32, 48, 64, 80])
    func thePendingLimitNeverLosesTheWalk(backend: StoreBackend, base: Int) throws {
        let document = bytes(
            #"""
            [{"uuid":"x-1","f":{"pad":"0123456789","g":{"h":[1,{"i":2}]},"j":[[3]]},"after":2},
             {"uuid":"x-2","k":[{"l":{"uuid":"x-3","m":1}},{"n":"o"}]},
             {"p":"q","uuid":"x-4"}]
            """#)
        let reference = try backend.store()
        try reference.ingest(document)
        #expect(reference.allIDs() == ["x-1", "x-2", "x-3", "x-4"])
        for limit in base..<(base + 16) {
            let store = try backend.store()
            var options = IngestOptions()
            options.maxPendingObjectBytes = limit
            let result = try store.ingest(document, options: options)
            for id in ["x-1", "x-2", "x-3"] {
                #expect(store.record(id: id)?.fields == reference.record(id: id)?.fields, "limit \(limit), \(id)")
            }
            #expect(Array(result.taskCollection.items.prefix(2)) == ["x-1", "x-2"], "limit \(limit)")
        }
    }

    @Test(arguments: StoreBackend.allCases) func objectsWhoseIDIsNotPrefixedAreContainers(backend: StoreBackend) throws
    {
        let store = try backend.store()
        try store.ingest(
            bytes(
                #"[{"uuid":"U-1","kid":{"uuid":"x-1"}},{"uuid":7},{"uuid":"u-"},{"uuid":{"uuid":"y-1"}},{"uuid":null}]"#
            ))
        #expect(store.allIDs() == ["x-1", "y-1"])
    }
}
