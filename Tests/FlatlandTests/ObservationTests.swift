import Flatland
import FlatlandJSON
import Testing

@Suite("Observation")
struct ObservationTests {
    @Test(arguments: StoreBackend.allCases) func changeSetsOfLaterWritesFilteredByPrefixAndID(backend: StoreBackend)
        async throws
    {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"before"}"#))
        var all = store.changes().makeAsyncIterator()
        var users = store.changes(prefix: "u").makeAsyncIterator()
        var typed = store.changes(of: Device.self).makeAsyncIterator()
        var one = store.changes(id: "u-2").makeAsyncIterator()

        try store.ingest(bytes(#"{"uuid":"u-2","firstname":"A","devices":[{"uuid":"d-1","name":"p"}]}"#))
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"after","age":3}"#))
        try store.ingest(bytes(#"{"uuid":"u-2","firstname":"B","lastname":"C"}"#))
        try store.ingest(bytes(#"{"uuid":"u-2","firstname":"B"}"#))  // no change: no change set
        try store.remove(EntityID<User>("u-2"))
        try store.upsert(Device(id: EntityID("d-2")))

        let a1 = try #require(await all.next())
        #expect(Set(a1.inserted) == ["u-2", "d-1"])
        #expect(a1.updated.isEmpty && a1.removed.isEmpty)
        let a2 = try #require(await all.next())
        #expect(a2.updated == [ChangeSet.Update(id: "u-1", fields: ["firstname", "age"])])
        let a3 = try #require(await all.next())
        #expect(a3.updated == [ChangeSet.Update(id: "u-2", fields: ["firstname", "lastname"])])
        let a4 = try #require(await all.next())
        #expect(a4.removed == ["u-2"])
        let a5 = try #require(await all.next())
        #expect(a5.inserted == ["d-2"])

        let u1 = try #require(await users.next())
        #expect(u1.inserted == ["u-2"])
        #expect(try #require(await users.next()).updated.map(\.id) == ["u-1"])
        #expect(try #require(await users.next()).updated.map(\.id) == ["u-2"])
        #expect(try #require(await users.next()).removed == ["u-2"])

        #expect(try #require(await typed.next()).inserted == ["d-1"])
        #expect(try #require(await typed.next()).inserted == ["d-2"])

        #expect(try #require(await one.next()).inserted == ["u-2"])
        #expect(
            try #require(await one.next()).updated == [ChangeSet.Update(id: "u-2", fields: ["firstname", "lastname"])])
        #expect(try #require(await one.next()).removed == ["u-2"])

        // Nothing else is waiting: a later write comes next.
        try store.ingest(bytes(#"{"uuid":"u-2","age":9}"#))
        #expect(try #require(await one.next()).inserted == ["u-2"])
        #expect(try #require(await users.next()).inserted == ["u-2"])
    }

    @Test(arguments: StoreBackend.allCases) func aFailedResponseNotifiesNobody(backend: StoreBackend) async throws {
        let store = try backend.store()
        var all = store.changes().makeAsyncIterator()
        #expect(throws: IngestError.self) { try store.ingest(bytes(#"[{"uuid":"x-1"}"#)) }
        try store.ingest(bytes(#"{"uuid":"x-2"}"#))
        #expect(try #require(await all.next()).inserted == ["x-2"])
    }

    @Test func filteringAChangeSet() {
        var changes = ChangeSet()
        changes.inserted = ["u-1", "d-1"]
        changes.updated = [ChangeSet.Update(id: "u-2", fields: ["a"]), ChangeSet.Update(id: "d-2", fields: ["b"])]
        changes.removed = ["u10-1", "u-3"]
        let users = changes.filtered(prefix: "u")
        #expect(users.inserted == ["u-1"])
        #expect(users.updated.map(\.id) == ["u-2"])
        #expect(users.removed == ["u-3"])
        #expect(changes.filtered(id: "d-2").ids == ["d-2"])
        #expect(changes.filtered(prefix: "d", id: "u-1").isEmpty)
        #expect(changes.ids == ["u-1", "d-1", "u-2", "d-2", "u10-1", "u-3"])
    }
}
