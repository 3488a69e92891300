import FlatlandJSON
import Testing

@_spi(StoreInternals) @testable import Flatland

/// A response's draft applied over a stored record: only the fields it carries and that
/// differ change, and a response that repeats the record leaves its box alone.
@Suite("Merging a response into stored records")
struct MergeTests {
    private static func box(_ store: some StoreReader, _ id: String) throws -> EntityBox {
        try #require(store.withContents { $0.box(id) })
    }

    @Test func aResponseThatRepeatsTheRecordKeepsItsBox() throws {
        let store = Store(registry: try seedRegistry())
        let text = #"{"uuid":"u-1","firstname":"Ada","lastname":"Lovelace","email":"ada@example.com","tags":["m"]}"#
        try store.ingest(bytes(text))
        let first = try Self.box(store, "u-1")
        let again = try store.ingest(bytes(text))
        #expect(again.changes.isEmpty)
        #expect(try Self.box(store, "u-1") === first)
        // Fewer fields, all the same: still nothing new.
        #expect(try store.ingest(bytes(#"{"uuid":"u-1","lastname":"Lovelace"}"#)).changes.isEmpty)
        #expect(try Self.box(store, "u-1") === first)
    }

    @Test func aChangedFieldMakesANewBoxAndSnapshotsKeepTheOld() throws {
        let store = Store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"Ada","lastname":"Lovelace","age":36}"#))
        let before = store.snapshot()
        let first = try Self.box(store, "u-1")
        let result = try store.ingest(bytes(#"{"uuid":"u-1","lastname":"Lovelace","age":37,"tags":["new"]}"#))
        #expect(result.changes.updated == [ChangeSet.Update(id: "u-1", fields: ["age", "tags"])])
        #expect(try Self.box(store, "u-1") !== first)
        let user = try #require(store.entity(EntityID<User>("u-1")))
        #expect(user.firstname == "Ada")
        #expect(user.lastname == "Lovelace")
        #expect(user.age == 37)
        #expect(user.tags == ["new"])
        #expect(store.record(EntityID<User>("u-1"))?.presentFields == ["firstname", "lastname", "age", "tags"])
        // The old record is a value: the snapshot taken before still reads it.
        #expect(before.entity(EntityID<User>("u-1"))?.age == 36)
        #expect(before.entity(EntityID<User>("u-1"))?.tags == [])
    }

    @Test func aFieldFirstSentWithItsDefaultValueIsAChange() throws {
        // Not present before, so it changes even though the stored value is the same default.
        let store = Store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"Ada"}"#))
        let result = try store.ingest(bytes(#"{"uuid":"u-1","lastname":""}"#))
        #expect(result.changes.updated == [ChangeSet.Update(id: "u-1", fields: ["lastname"])])
        #expect(store.record(EntityID<User>("u-1"))?.presentFields == ["firstname", "lastname"])
    }

    @Test func computedPropertiesCompareAndCopyThroughTheirKeyPaths() throws {
        let store = Store(registry: try EntityRegistry([Memo.self]))
        try store.ingest(bytes(#"{"uuid":"mo-1","text":"a","title":"hello"}"#))
        let first = try Self.box(store, "mo-1")
        #expect(try store.ingest(bytes(#"{"uuid":"mo-1","title":"hello"}"#)).changes.isEmpty)
        #expect(try Self.box(store, "mo-1") === first)
        let result = try store.ingest(bytes(#"{"uuid":"mo-1","title":"world"}"#))
        #expect(result.changes.updated == [ChangeSet.Update(id: "mo-1", fields: ["title"])])
        let memo = try #require(store.entity(EntityID<Memo>("mo-1")))
        #expect(memo.title == "WORLD")
        #expect(memo.text == "a")
    }

    @Test func mergingNothingNewReturnsTheStoredBoxItself() throws {
        let store = Store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"Ada","lastname":"Lovelace"}"#))
        let stored = try #require(try Self.box(store, "u-1") as? TypedBox<User>)
        let type = stored.entityType
        var firstname = FieldSet()
        firstname.insert(0)
        var lastname = FieldSet()
        lastname.insert(1)

        // The same first name: no box is made.
        let same = stored.merged(with: TypedBox(value: stored.value, present: firstname, dataVersion: nil, type: type))
        #expect(same.box === stored)
        #expect(same.changed.isEmpty)

        // Another last name: a new box with it, the stored one untouched.
        var other = stored.value
        other.lastname = "Byron"
        let changed = stored.merged(with: TypedBox(value: other, present: lastname, dataVersion: nil, type: type))
        #expect(changed.box !== stored)
        #expect(changed.changed == ["lastname"])
        #expect((changed.box as? TypedBox<User>)?.value.lastname == "Byron")
        #expect((changed.box as? TypedBox<User>)?.value.firstname == "Ada")
        #expect(stored.value.lastname == "Lovelace")

        // The same fields at a data version: a new box that carries the version.
        let versioned = stored.merged(
            with: TypedBox(value: stored.value, present: firstname, dataVersion: 5, type: type))
        #expect(versioned.box !== stored)
        #expect(versioned.changed.isEmpty)
        #expect(versioned.box.dataVersion == 5)
    }

    @Test func fieldSetIteratesItsIndexesInOrder() {
        var set = FieldSet()
        for i in [255, 0, 64, 63, 128, 7] { set.insert(i) }
        var seen: [Int] = []
        set.forEach { seen.append($0) }
        #expect(seen == [0, 7, 63, 64, 128, 255])
        #expect(set.indexes == seen)
        #expect(set.count == 6)
        #expect(FieldSet().count == 0)
    }
}
