@_spi(FlatlandInternal) import Flatland
import Foundation
import GRDB
import Testing

@testable import FlatlandSQLite

/// Collections are stored as one blob each (schema version 3); files of older versions keep a
/// row per position, which must still load.
@Suite("Collection storage")
struct CollectionFormatTests {
    /// Pages with gaps, repeated ids, ids with U+0000 and non-ASCII text, an empty list and a
    /// list of distinct ids: each collection reads back equal after the file is reopened.
    @Test func collectionsRoundTripThroughAReopenedFile() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        var written: [EntityCollection] = []
        do {
            let persistence = try SQLitePersistence(path: path)
            let store = Store(persistence: persistence)
            let responses: [(String, String)] = [
                (
                    #"{"offset":3,"total":9,"data":[{"uuid":"x-a"},{"n":1},{"uuid":"x-a"},{"uuid":"x-\u0000é"}]}"#,
                    "/gaps"
                ),
                (#"{"offset":0,"data":[{"uuid":"x-1"},{"uuid":"x-2"},{"uuid":"x-3"}]}"#, "/distinct"),
                ("[]", "/empty"),
                (#"[{"uuid":"x-z"},{"uuid":"x-y"},{"uuid":"x-z"}]"#, "/whole"),
            ]
            for (text, endpoint) in responses { try store.ingest(Array(text.utf8), endpoint: endpoint) }
            written = store.collections
            persistence.close()
        }
        let gaps = try #require(written.first { $0.displayIdentifier == "/gaps" })
        #expect(gaps.items == [nil, nil, nil, "x-a", nil, "x-a", "x-\u{0}é"])
        let persistence = try SQLitePersistence(path: path)
        defer { persistence.close() }
        let store = Store(persistence: persistence)
        #expect(store.collections == written)
        #expect(store.collections.count == 8)
        for collection in written {
            #expect(store.collection(displayIdentifier: collection.displayIdentifier) == collection)
        }
    }

    /// A file of schema version 1 with a collection stored a row per position: it is migrated,
    /// its collection loads from the rows, and the next page written to it moves it to the blob
    /// (the rows go) with the old positions kept.
    @Test func aCollectionStoredAsRowsLoadsAndMovesToTheBlob() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: FileTests.version1)
            try db.execute(
                sql: """
                    INSERT INTO collections (seq, id, display, kind, total, length, touched)
                    VALUES (1, 'c-old', '/old', 'endpoint', 10, 5, 1);
                    INSERT INTO collection_items (seq, position, item)
                    VALUES (1, 0, 'x-1'), (1, 1, 'x-2'), (1, 3, 'x-1'), (1, 4, 'x-4');
                    """)
        }
        try queue.close()

        do {
            let persistence = try SQLitePersistence(path: path)
            #expect(
                persistence.appliedMigrations == [
                    "v2-index-by-type-and-counts", "v3-collection-items-blob", "v4-record-fields-encoded",
                ])
            #expect(try persistence.schemaVersion() == 4)
            let store = Store(persistence: persistence)
            let old = try #require(store.collection(displayIdentifier: "/old"))
            #expect(old.id == "c-old")
            #expect(old.items == ["x-1", "x-2", nil, "x-1", "x-4"])
            #expect(old.total == 10)
            try store.ingest(
                Array(#"{"offset":5,"total":10,"data":[{"uuid":"x-5"},{"uuid":"x-1"}]}"#.utf8),
                endpoint: "/old?offset=5")
            persistence.close()
        }
        let check = try DatabaseQueue(path: path)
        let rows = try check.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM collection_items") }
        let rowCollections = try check.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM collections WHERE items IS NULL")
        }
        try check.close()
        #expect(rows == 0)
        #expect(rowCollections == 0)
        let persistence = try SQLitePersistence(path: path)
        defer { persistence.close() }
        let merged = try #require(try persistence.collection(id: "c-old"))
        #expect(merged.items == ["x-1", "x-2", nil, "x-1", "x-4", "x-5", "x-1"])
        #expect(merged.total == 10)
    }

    /// A collection of an old file (a row per position) whose length is damaged — negative, or
    /// far past its last item — is a `corrupt` error naming the file, not an allocation of that
    /// many positions (2^40 trapped before) nor a wrong list.
    @Test(arguments: [-1, 1 << 40, 4 + (1 << 20) + 1])
    func aDamagedLengthOfACollectionStoredAsRowsIsCorrupt(length: Int) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: FileTests.version1)
            try db.execute(
                sql: """
                    INSERT INTO collections (seq, id, display, kind, total, length, touched)
                    VALUES (1, 'c-old', '/old', 'endpoint', 10, ?, 1);
                    INSERT INTO collection_items (seq, position, item) VALUES (1, 0, 'x-1'), (1, 3, 'x-4');
                    """, arguments: [length])
        }
        try queue.close()
        do {
            let persistence = try SQLitePersistence(path: path)
            defer { persistence.close() }
            let error = #expect(throws: SQLiteStoreError.self) {
                _ = try persistence.collection(displayIdentifier: "/old")
            }
            #expect(error?.code == .corrupt)
            #expect(error?.path == path)
        }
        // The longest length that is not damage still loads.
        let fine = try DatabaseQueue(path: path)
        try fine.write { db in
            try db.execute(sql: "UPDATE collections SET length = ?", arguments: [4 + (1 << 20)])
        }
        try fine.close()
        let reopened = try SQLitePersistence(path: path)
        defer { reopened.close() }
        let loaded = try #require(try reopened.collection(displayIdentifier: "/old"))
        #expect(loaded.items.count == 4 + (1 << 20))
        #expect(loaded.items.prefix(4) == ["x-1", nil, nil, "x-4"])
    }

    /// A damaged blob is a `corrupt` error naming the file, not a crash or a wrong list.
    @Test(
        arguments: [
            [], [0x02], [0x01, 0x05], [0x01, 0x01, 0x03, 0x78, 0x2D, 0x31, 0x01, 0x01, 0x07], [0x01, 0x00, 0x00, 0xFF],
        ] as [[UInt8]])
    func aDamagedBlobIsCorrupt(blob: [UInt8]) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        do {
            let persistence = try SQLitePersistence(path: path)
            try Store(persistence: persistence).ingest(Array(#"[{"uuid":"x-1"}]"#.utf8), endpoint: "/e")
            persistence.close()
        }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "UPDATE collections SET items = ?", arguments: [Data(blob)]) }
        try queue.close()
        let persistence = try SQLitePersistence(path: path)
        defer { persistence.close() }
        let error = #expect(throws: SQLiteStoreError.self) { _ = try persistence.collection(displayIdentifier: "/e") }
        #expect(error?.code == .corrupt)
        #expect(error?.path == path)
    }

    /// The blob keeps a bounded set of ids once: 10,000 positions over 10 ids take a few bytes
    /// per position.
    @Test func positionsOverABoundedPoolAreSmall() throws {
        let items: [String?] = (0..<10_000).map { $0 % 7 == 0 ? nil : "x-pool-member-\($0 % 10)" }
        let collection = EntityCollection(id: "c-1", displayIdentifier: "/p", kind: .endpoint, items: items, total: nil)
        let blob = CollectionItemsBlob.encode(collection.positions)
        #expect(blob.count < 10_200)
        #expect(CollectionItemsBlob.decode(blob)?.items == items)
    }
}
