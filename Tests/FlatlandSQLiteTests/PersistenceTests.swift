import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandSQLite
import Foundation
import Testing

@Suite("SQLite persistence")
struct PersistenceTests {
    static let page1 =
        #"{"offset":0,"count":2,"total":5,"data":[{"uuid":"u-1","firstname":"Ann","email":"ann@x","devices":[{"uuid":"d-1","name":"phone"}]},{"uuid":"u-2","firstname":"Bob","email":"bob@x"}]}"#
    static let page2 =
        #"{"offset":3,"count":2,"total":5,"data":[{"uuid":"u-4","email":"ann@x","age":40},{"uuid":"x-9","free":[1,{"uuid":"u-1"}]}]}"#
    static let update = #"[{"uuid":"u-1","age":31},{"uuid":"s-1","user":"u-2","device":{"uuid":"d-1","os":"iOS"}}]"#

    /// Writes the same responses and calls into `store`.
    static func fill(_ store: Store) throws {
        try store.ingest(bytes(page1), endpoint: "/users?offset=0&count=2", taskID: "t1")
        try store.ingest(bytes(page2), endpoint: "/users?offset=3&count=2", taskID: "t2")
        try store.ingest(bytes(update), taskID: "t3")
        var user = SeedUser(id: EntityID("u-7"))
        user.email = "seven@x"
        try store.upsert(user)
        try store.remove(EntityID<SeedUser>("u-2"))
    }

    @Test func aReopenedFileReadsBackWhatAnInMemoryStoreHolds() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let memory = try fillMemoryAndFile(path, Self.fill)
        let reopened = Store(registry: try registry(), persistence: try SQLitePersistence(path: path))
        #expect(reopened.isLazy)
        #expect(fingerprint(reopened) == fingerprint(memory))
        #expect(reopened.entity(EntityID<SeedUser>("u-1"))?.age == 31)
        #expect(try reopened.entities(where: \SeedUser.email, equals: "ann@x").map(\.id.rawValue) == ["u-1", "u-4"])
        // The removed u-2 left the collection: the later items moved up, the total went down.
        #expect(reopened.collection(displayIdentifier: "/users")?.items == ["u-1", nil, "u-4", "x-9"])
        #expect(reopened.collection(displayIdentifier: "/users")?.total == 4)
        // (An upsert is not a response: it makes no task collection.)
        #expect(reopened.collections(kind: .task).map(\.displayIdentifier) == ["t1", "t2", "t3"])
        #expect(!reopened.contains(EntityID<SeedUser>("u-2")))
        // A later write goes on from where the file was.
        try reopened.ingest(bytes(#"{"uuid":"u-1","firstname":"Anne"}"#))
        #expect(reopened.entity(EntityID<SeedUser>("u-1"))?.firstname == "Anne")
        #expect(reopened.entity(EntityID<SeedUser>("u-1"))?.age == 31)
    }

    /// A file with `n` users `u-0`… (email `user<i>@x`) and a device, closed.
    static func makeFile(users n: Int) throws -> String {
        let path = Scratch.path()
        let persistence = try SQLitePersistence(path: path)
        let store = Store(registry: try registry(), persistence: persistence)
        let users = (0..<n).map { #"{"uuid":"u-\#($0)","firstname":"F\#($0)","email":"user\#($0)@x"}"# }
        try store.ingest(bytes("[" + users.joined(separator: ",") + #",{"uuid":"d-1","name":"n"}]"#))
        persistence.close()
        return path
    }

    @Test func aQueryForOneEntityLoadsOnlyThatOne() throws {
        let path = try Self.makeFile(users: 200)
        defer { Scratch.remove(path) }
        let options = SQLitePersistence.Options(cacheCapacity: 50)
        let store = Store(registry: try registry(), persistence: try SQLitePersistence(path: path, options: options))
        #expect(store.persistenceLoads == 0)
        #expect(store.entity(EntityID<SeedUser>("u-42"))?.firstname == "F42")
        #expect(store.persistenceLoads == 1)
        // Counts, ids, existence and index lookups come from SQL, not from loading records.
        #expect(store.count == 201)
        #expect(store.count(prefix: "u") == 200)
        #expect(store.countsByPrefix == ["u": 200, "d": 1])
        #expect(store.ids(prefix: "d") == ["d-1"])
        #expect(store.ids(prefix: "u").count == 200)
        #expect(store.contains("u-99"))
        #expect(!store.contains("u-999"))
        #expect(store.persistenceLoads == 1)
        #expect(try store.entities(where: \SeedUser.email, equals: "user7@x").map(\.id.rawValue) == ["u-7"])
        #expect(store.persistenceLoads == 2)
        // Asked again: from the cache.
        #expect(store.entity(EntityID<SeedUser>("u-42"))?.firstname == "F42")
        #expect(store.persistenceLoads == 2)
        // All of one type loads that type only.
        #expect(store.all(SeedDevice.self).count == 1)
        #expect(store.persistenceLoads == 3)
    }

    @Test func theCacheKeepsTheMostRecentlyUsedRecords() throws {
        let path = try Self.makeFile(users: 10)
        defer { Scratch.remove(path) }
        let options = SQLitePersistence.Options(cacheCapacity: 3)
        let store = Store(registry: try registry(), persistence: try SQLitePersistence(path: path, options: options))
        func read(_ n: Int) { #expect(store.entity(EntityID<SeedUser>("u-\(n)"))?.firstname == "F\(n)") }
        read(0)
        read(1)
        read(2)
        #expect(store.persistenceLoads == 3)
        #expect(store.cachedRecordCount == 3)
        read(0)  // u-0 becomes the most recent; u-1 is now the least
        #expect(store.persistenceLoads == 3)
        read(3)  // evicts u-1
        #expect(store.persistenceLoads == 4)
        #expect(store.cachedRecordCount == 3)
        read(0)
        read(2)
        read(3)
        #expect(store.persistenceLoads == 4)
        read(1)  // was evicted: loaded again
        #expect(store.persistenceLoads == 5)
        #expect(store.cachedRecordCount == 3)
    }

    @Test func aZeroCacheStillReadsCorrectly() throws {
        let path = try Self.makeFile(users: 5)
        defer { Scratch.remove(path) }
        let options = SQLitePersistence.Options(cacheCapacity: 0)
        let store = Store(registry: try registry(), persistence: try SQLitePersistence(path: path, options: options))
        #expect(store.entity(EntityID<SeedUser>("u-1"))?.firstname == "F1")
        #expect(store.entity(EntityID<SeedUser>("u-1"))?.firstname == "F1")
        #expect(store.persistenceLoads == 2)
        #expect(store.cachedRecordCount == 0)
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"G"}"#))
        #expect(store.entity(EntityID<SeedUser>("u-1"))?.firstname == "G")
        #expect(store.entity(EntityID<SeedUser>("u-1"))?.email == "user1@x")
    }

    @Test func snapshotsOfAFileDoNotSeeLaterWrites() throws {
        let path = try Self.makeFile(users: 3)
        defer { Scratch.remove(path) }
        let store = Store(registry: try registry(), persistence: try SQLitePersistence(path: path))
        let before = store.snapshot()
        try store.ingest(bytes(#"[{"uuid":"u-1","firstname":"Changed"},{"uuid":"u-50"}]"#))
        try store.remove(EntityID<SeedUser>("u-2"))
        #expect(before.entity(EntityID<SeedUser>("u-1"))?.firstname == "F1")
        #expect(before.contains("u-2"))
        #expect(before.count(prefix: "u") == 3)
        #expect(store.entity(EntityID<SeedUser>("u-1"))?.firstname == "Changed")
        #expect(store.count(prefix: "u") == 3)
        #expect(store.ids(prefix: "u") == ["u-0", "u-1", "u-50"])
    }

    @Test func metadataIsKeptAcrossOpens() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        do {
            let persistence = try SQLitePersistence(path: path)
            try persistence.setMetadata(bytes("cursor-1"), forKey: "sync.cursor")
            try persistence.setMetadata(bytes("x"), forKey: "gone")
            try persistence.setMetadata(nil, forKey: "gone")
            persistence.close()
        }
        let persistence = try SQLitePersistence(path: path)
        #expect(try persistence.metadata(forKey: "sync.cursor") == bytes("cursor-1"))
        #expect(try persistence.metadata(forKey: "gone") == nil)
        #expect(try persistence.schemaVersion() == 4)
    }
}
