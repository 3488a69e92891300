import Flatland
import FlatlandJSON
import Testing

@Suite("Store hooks")
struct HooksTests {
    @Test(arguments: StoreBackend.allCases) func turnedAwayEntitiesAreNotStoredNorInCollections(backend: StoreBackend)
        throws
    {
        let asked = Box<[String]>([])
        let hooks = StoreHooks(condition: { incoming in
            asked.withValue { $0.append(incoming.id) }
            return (incoming.entity(as: User.self)?.age ?? 100) >= 18
        })
        let store = try backend.store(registry: try seedRegistry(), hooks: hooks)
        let result = try store.ingest(
            bytes(
                #"{"offset":0,"total":4,"data":[{"uuid":"u-1","age":30},{"uuid":"u-2","age":12},{"uuid":"d-1"},{"uuid":"u-3","age":40,"friends":[{"uuid":"u-4","age":5}]}]}"#
            ), endpoint: "/users")
        #expect(store.allIDs() == ["d-1", "u-1", "u-3"])
        #expect(result.taskCollection.items == ["u-1", "d-1", "u-3"])
        #expect(result.endpointCollection?.items == ["u-1", nil, "d-1", "u-3"])
        #expect(!result.changes.inserted.contains("u-2"))
        #expect(Set(asked.current) == ["u-1", "u-2", "d-1", "u-3", "u-4"])
        // The parent still names the turned-away friend: it is the server's reference.
        #expect(store.entity(EntityID<User>("u-3"))?.friends == [EntityID("u-4")])
    }

    @Test(arguments: StoreBackend.allCases) func conditionSeesTheIncomingFields(backend: StoreBackend) throws {
        let seen = Box<[String: [String]]>([:])
        let hooks = StoreHooks(condition: { incoming in
            seen.withValue { $0[incoming.id] = incoming.presentFields }
            return incoming.untypedFields?["keep"] != false
        })
        let store = try backend.store(registry: try seedRegistry(), hooks: hooks)
        try store.ingest(
            bytes(#"[{"uuid":"u-1","age":3,"firstname":"A"},{"uuid":"x-1","keep":false},{"uuid":"x-2","b":1}]"#))
        #expect(seen.current["u-1"] == ["firstname", "age"])
        #expect(seen.current["x-1"] == ["keep"])
        #expect(store.allIDs() == ["u-1", "x-2"])
    }

    /// One field read alone, typed or untyped, is what the whole fields say for it.
    @Test(arguments: StoreBackend.allCases) func conditionReadsOneFieldAlone(backend: StoreBackend) throws {
        let keys = ["firstname", "age", "created", "friends", "address", "email", "nope", "b", "c"]
        let seen = Box<[String: [String]]>([:])
        let hooks = StoreHooks(condition: { incoming in
            let whole = incoming.fields
            for key in keys where incoming.field(key) != whole[key] {
                seen.withValue { $0[incoming.id, default: []].append(key) }
            }
            seen.withValue {
                $0["read", default: []].append(incoming.id + "=" + (incoming.field("age") ?? .null).jsonString())
            }
            return true
        })
        let store = try backend.store(registry: try seedRegistry(), hooks: hooks)
        try store.ingest(
            bytes(
                #"""
                [{"uuid":"u-1","age":3,"firstname":"A \"q\" \u0000","created":"2026-11-28T07:30:01.123Z",
                "friends":[{"uuid":"u-2"}],"address":{"city":"Z","zip":null}},
                {"uuid":"x-1","age":[1,{"$ref":"r"}],"b":"t","c":null}]
                """#))
        #expect(seen.current["u-1"] == nil)
        #expect(seen.current["u-2"] == nil)
        #expect(seen.current["x-1"] == nil)
        #expect(seen.current["read"]?.sorted() == ["u-1=3", "u-2=null", #"x-1=[1,{"$$ref":"r"}]"#])
    }

    @Test(arguments: StoreBackend.allCases) func beforeAndAfterStore(backend: StoreBackend) throws {
        let before = Box<[String]>([])
        let after = Box<[(String, [String])]>([])
        let store = Box<Store?>(nil)
        let hooks = StoreHooks(
            beforeStore: { incoming in
                // Before: the store does not have this batch yet.
                let known = store.current?.contains(incoming.id) ?? false
                before.withValue { $0.append("\(incoming.id):\(known)") }
            },
            afterStore: { record in
                let visible = store.current?.contains(record.id) ?? false
                after.withValue { $0.append((record.id + ":\(visible)", record.presentFields)) }
            })
        let s = try backend.store(registry: try seedRegistry(), hooks: hooks)
        store.withValue { $0 = s }
        // The hooks reach the store through the box: break that cycle at the end.
        defer { store.withValue { $0 = nil } }
        try s.ingest(bytes(#"[{"uuid":"u-1","age":1},{"uuid":"u-2","devices":[{"uuid":"d-1"}]}]"#))
        #expect(before.current == ["u-1:false", "d-1:false", "u-2:false"])
        #expect(after.current.map(\.0) == ["u-1:true", "d-1:true", "u-2:true"])
        #expect(after.current.first?.1 == ["age"])
        // An update that changes nothing is not stored again.
        before.withValue { $0 = [] }
        after.withValue { $0 = [] }
        try s.ingest(bytes(#"[{"uuid":"u-1","age":1},{"uuid":"u-2","firstname":"B"}]"#))
        #expect(before.current == ["u-1:true", "u-2:true"])
        #expect(after.current.map(\.0) == ["u-2:true"])
    }

    @Test(arguments: StoreBackend.allCases) func hooksDoNotRunForAFailedResponse(backend: StoreBackend) throws {
        let calls = Box(0)
        let hooks = StoreHooks(
            condition: { _ in true }, beforeStore: { _ in calls.withValue { $0 += 1 } },
            afterStore: { _ in calls.withValue { $0 += 1 } })
        let store = try backend.store(hooks: hooks)
        #expect(throws: IngestError.self) { try store.ingest(bytes(#"[{"uuid":"x-1"},"#)) }
        #expect(calls.current == 0)
        #expect(store.count == 0)
    }
}
