import Flatland
import FlatlandJSON
import Testing

@Suite("Data and class versions")
struct VersionTests {
    static var versioned: IngestOptions {
        var options = IngestOptions()
        options.versionKey = "v"
        return options
    }

    @Test(arguments: StoreBackend.allCases) func untypedNotNewerIsSkippedNewerApplies(backend: StoreBackend) throws {
        let store = try backend.store()
        let options = Self.versioned
        try store.ingest(bytes(#"{"uuid":"x-1","v":2,"a":1}"#), options: options)
        #expect(store.record(id: "x-1")?.dataVersion == 2)
        var result = try store.ingest(bytes(#"{"uuid":"x-1","v":2,"a":2}"#), options: options)
        #expect(result.changes.isEmpty)
        result = try store.ingest(bytes(#"{"uuid":"x-1","v":1,"a":3}"#), options: options)
        #expect(result.changes.isEmpty)
        #expect(store.record(id: "x-1")?.fields["a"] == 1)
        // Skipped, but still the task's item.
        #expect(result.taskCollection.items == ["x-1"])
        result = try store.ingest(bytes(#"{"uuid":"x-1","v":3,"a":4}"#), options: options)
        #expect(store.record(id: "x-1")?.fields["a"] == 4)
        #expect(store.record(id: "x-1")?.dataVersion == 3)
        // No version in the response: it cannot be shown newer, so it overwrites nothing; it
        // only adds the fields the record lacks, and the stored version stays.
        try store.ingest(bytes(#"{"uuid":"x-1","a":5,"b":1}"#), options: options)
        #expect(store.record(id: "x-1")?.fields["a"] == 4)
        #expect(store.record(id: "x-1")?.fields["b"] == 1)
        #expect(store.record(id: "x-1")?.dataVersion == 3)
        try store.ingest(bytes(#"{"uuid":"x-1","v":3,"a":6}"#), options: options)
        #expect(store.record(id: "x-1")?.fields["a"] == 4)
    }

    @Test(arguments: StoreBackend.allCases) func noStoredVersionApplies(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(bytes(#"{"uuid":"x-1","a":1}"#), options: Self.versioned)
        #expect(store.record(id: "x-1")?.dataVersion == nil)
        try store.ingest(bytes(#"{"uuid":"x-1","v":0,"a":2}"#), options: Self.versioned)
        #expect(store.record(id: "x-1")?.fields["a"] == 2)
        #expect(store.record(id: "x-1")?.dataVersion == 0)
    }

    @Test(arguments: StoreBackend.allCases) func typeDataVersionKeyIsUsedWithoutOptions(backend: StoreBackend) throws {
        let store = try backend.store(registry: try fullRegistry())
        let id = EntityID<Article>("ar-1")
        try store.ingest(bytes(#"{"uuid":"ar-1","title":"first","rev":5}"#))
        #expect(store.record(id)?.dataVersion == 5)
        try store.ingest(bytes(#"{"uuid":"ar-1","title":"stale","rev":4}"#))
        #expect(store.entity(id)?.title == "first")
        try store.ingest(bytes(#"{"uuid":"ar-1","title":"same","rev":5}"#))
        #expect(store.entity(id)?.title == "first")
        try store.ingest(bytes(#"{"rev":6,"title":"newer","uuid":"ar-1"}"#))
        #expect(store.entity(id)?.title == "newer")
        #expect(store.entity(id)?.rev == 6)
    }

    @Test(arguments: StoreBackend.allCases) func typeDataVersionKeyWinsOverTheOptions(backend: StoreBackend) throws {
        let store = try backend.store(registry: try fullRegistry())
        let id = EntityID<Article>("ar-1")
        try store.ingest(bytes(#"{"uuid":"ar-1","title":"a","rev":5,"v":1}"#), options: Self.versioned)
        try store.ingest(bytes(#"{"uuid":"ar-1","title":"b","rev":4,"v":9}"#), options: Self.versioned)
        #expect(store.entity(id)?.title == "a")
        #expect(store.record(id)?.dataVersion == 5)
    }

    @Test(arguments: StoreBackend.allCases) func aNewerVersionWithTheSameFieldsStillRaisesTheStoredVersion(
        backend: StoreBackend
    ) throws {
        let store = try backend.store(registry: try fullRegistry())
        let id = EntityID<Note>("n-1")
        try store.ingest(bytes(#"{"uuid":"n-1","v":1,"text":"a"}"#), options: Self.versioned)
        try store.ingest(bytes(#"{"uuid":"n-1","v":2,"text":"a"}"#), options: Self.versioned)
        #expect(store.record(id)?.dataVersion == 2)
        try store.ingest(bytes(#"{"uuid":"n-1","v":2,"text":"b"}"#), options: Self.versioned)
        #expect(store.entity(id)?.text == "a")
    }

    @Test(arguments: StoreBackend.allCases) func withinOneResponseEntitiesApplyInTheOrderTheyClose(
        backend: StoreBackend
    ) throws {
        let store = try backend.store()
        try store.ingest(bytes(#"{"uuid":"x-1","v":4,"n":"stored"}"#), options: Self.versioned)
        try store.ingest(
            bytes(
                #"""
                [{"uuid":"x-1","v":3,"n":"old"},{"uuid":"x-1","v":6,"n":"six"},{"uuid":"x-1","v":5,"n":"five"},
                 {"uuid":"x-2","v":2,"n":"outer","kid":{"uuid":"x-2","v":3,"n":"inner"}}]
                """#), options: Self.versioned)
        #expect(store.record(id: "x-1")?.fields["n"] == "six")
        #expect(store.record(id: "x-1")?.dataVersion == 6)
        // The inner object closes first; the outer one is then not newer and is skipped whole.
        #expect(store.record(id: "x-2")?.fields["n"] == "inner")
        #expect(store.record(id: "x-2")?.fields["kid"] == nil)
        #expect(store.record(id: "x-2")?.dataVersion == 3)
    }

    @Test(arguments: StoreBackend.allCases) func nestedEntitiesAreJudgedOnTheirOwnVersions(backend: StoreBackend) throws
    {
        let store = try backend.store()
        try store.ingest(bytes(#"[{"uuid":"x-1","v":5},{"uuid":"y-1","v":1}]"#), options: Self.versioned)
        try store.ingest(
            bytes(#"{"uuid":"x-1","v":4,"n":"no","child":{"uuid":"y-1","v":2,"n":"yes"}}"#), options: Self.versioned)
        #expect(store.record(id: "x-1")?.fields["n"] == nil)
        #expect(store.record(id: "y-1")?.fields["n"] == "yes")
    }

    @Test(arguments: StoreBackend.allCases) func olderClassVersionIsMigratedOnRestore(backend: StoreBackend) throws {
        let store = try backend.store(registry: try fullRegistry())
        let record = try store.restore(
            id: "pr-1", prefix: "pr", fields: ["first": "Ada", "last": "Lovelace", "age": 36], classVersion: 1,
            dataVersion: 7)
        #expect(record.classVersion == Profile.classVersion)
        let profile = try #require(store.entity(EntityID<Profile>("pr-1")))
        #expect(profile.fullName == "Ada Lovelace")
        #expect(profile.age == 36)
        #expect(store.record(id: "pr-1")?.classVersion == 2)
        #expect(store.record(id: "pr-1")?.dataVersion == 7)
        #expect(store.record(id: "pr-1")?.presentFields == ["fullName", "age"])
    }

    @Test(arguments: StoreBackend.allCases) func currentClassVersionIsNotMigrated(backend: StoreBackend) throws {
        let store = try backend.store(registry: try fullRegistry())
        try store.restore(
            id: "pr-1", prefix: "pr", fields: ["fullName": "Grace Hopper", "first": "x"], classVersion: 2,
            dataVersion: nil)
        #expect(store.entity(EntityID<Profile>("pr-1"))?.fullName == "Grace Hopper")
    }

    @Test(arguments: StoreBackend.allCases) func restoreChecksTheStoredFields(backend: StoreBackend) throws {
        let store = try backend.store(registry: try fullRegistry())
        #expect(throws: (any Error).self) {
            try store.restore(id: "pr-1", prefix: "pr", fields: ["age": "old"], classVersion: 2, dataVersion: nil)
        }
        #expect(!store.contains("pr-1"))
        let untyped = try store.restore(id: "x-1", prefix: "x", fields: ["a": [1, 2]], classVersion: 3, dataVersion: 1)
        #expect(untyped.fields == ["a": [1, 2]])
        #expect(store.record(id: "x-1")?.classVersion == 3)
    }

    @Test(arguments: StoreBackend.allCases) func versionsDoNotApplyToRestoredRecordsTwice(backend: StoreBackend) throws
    {
        let store = try backend.store(registry: try fullRegistry())
        try store.restore(id: "ar-1", prefix: "ar", fields: ["title": "t", "rev": 3], classVersion: 1, dataVersion: 3)
        try store.ingest(bytes(#"{"uuid":"ar-1","title":"older","rev":2}"#))
        #expect(store.entity(EntityID<Article>("ar-1"))?.title == "t")
    }
}
