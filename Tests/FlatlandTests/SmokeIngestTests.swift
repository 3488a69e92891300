import Flatland
import FlatlandFixtures
import Testing

@Suite struct SmokeIngestTests {
    @Test func ingestsSeedDocument() throws {
        let store = Store(registry: try seedRegistry())
        var gen = SeedGenerator(seed: 1)
        let doc = gen.document(approximateBytes: 20_000)
        let result = try store.ingest(doc, endpoint: "/users?offset=0&count=20")
        print(store.countsByPrefix, result.taskCollection.items.count, result.endpointCollection as Any)
        #expect(store.count(prefix: "u") > 0)
        let json =
            #"{"data":[{"firstname":"A","uuid":"u-1","age":3,"friends":[{"uuid":"u-2","age":4},{"uuid":"u-3"}],"address":{"city":"X"}}],"offset":5,"total":9}"#
        let r = try store.ingest(bytes(json), endpoint: "/x?offset=5")
        let u1 = try #require(store.entity(EntityID<User>("u-1")))
        #expect(u1.firstname == "A")
        #expect(u1.age == 3)
        #expect(u1.friends.map(\.rawValue) == ["u-2", "u-3"])
        #expect(u1.address?.city == "X")
        #expect(store.entity(EntityID<User>("u-2"))?.age == 4)
        print(r.endpointCollection as Any, r.taskCollection)
        do {
            try store.ingest(bytes(#"[{"uuid":"u-9","age":"x"}]"#))
            Issue.record("no error")
        } catch {
            print(error)
            #expect(error.description.contains("$[0].age: expected integer, found string"))
        }
        #expect(!store.contains("u-9"))
    }
}
