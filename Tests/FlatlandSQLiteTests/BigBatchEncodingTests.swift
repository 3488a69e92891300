import Flatland
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Testing

/// A big batch's records are encoded by worker threads while the writer inserts them: the same
/// bytes as the inline encoding of a small batch, whatever the batch's size around the
/// threshold, and nothing at all when the batch fails halfway.
@Suite("SQLite big batch encoding")
struct BigBatchEncodingTests {
    /// The elements of `sampleResponse(count:)`, each as its own JSON text.
    static func elements(count: Int) throws -> [[UInt8]] {
        guard case .array(let items) = try JSONValue(parsing: sampleResponse(count: count)) else { return [] }
        return items.map { item in
            var writer = JSONWriter()
            writer.value(item)
            return writer.bytes
        }
    }

    /// One response of these elements.
    static func response(_ elements: some Collection<[UInt8]>) -> [UInt8] {
        [UInt8(ascii: "[")] + Array(elements.joined(separator: [UInt8(ascii: ",")])) + [UInt8(ascii: "]")]
    }

    /// Batches of 510 to 1,025 records, across the threshold of the workers (512) and chunk
    /// boundaries (128 records), in one ingest and in ingests of 100 records (each encoded
    /// inline): every record's stored bytes are the same.
    @Test(arguments: [510, 511, 512, 513, 639, 640, 641, 1_025])
    func oneBigBatchStoresTheSameBytesAsSmallOnes(records: Int) throws {
        let elements = try Self.elements(count: records - 2)
        #expect(elements.count == records)
        let big = Scratch.path()
        let small = Scratch.path()
        defer {
            Scratch.remove(big)
            Scratch.remove(small)
        }
        do {
            let persistence = try SQLitePersistence(path: big)
            let store = Store(registry: try sampleRegistry(), persistence: persistence)
            try store.ingest(Self.response(elements))
            persistence.close()
        }
        do {
            let persistence = try SQLitePersistence(path: small)
            let store = Store(registry: try sampleRegistry(), persistence: persistence)
            for start in stride(from: 0, to: elements.count, by: 100) {
                try store.ingest(Self.response(elements[start..<min(start + 100, elements.count)]))
            }
            persistence.close()
        }
        let bigFields = try RecordFormatTests.rawFields(big)
        #expect(bigFields.count == records)
        #expect(bigFields == (try RecordFormatTests.rawFields(small)))
    }

    /// A SQLite failure at one record of a big batch (a trigger stands for a full disk), early
    /// while the workers still encode, or late: the ingest throws, and neither the file nor the
    /// store holds any record of the batch; without the failure the same batch then commits.
    @Test(arguments: [(600, 3), (1_500, 1_400)])
    func aBigBatchThatFailsHalfwayCommitsNothing(records: Int, failingAt: Int) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        do {
            let persistence = try SQLitePersistence(path: path)
            let store = Store(registry: try sampleRegistry(), persistence: persistence)
            try store.ingest(bytes(#"{"uuid":"note-before","a":1}"#))
            persistence.close()
        }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER fail_once BEFORE INSERT ON entities WHEN NEW.id = 'sm-\(failingAt)'
                    BEGIN SELECT RAISE(ABORT, 'no space left'); END
                    """)
        }
        try queue.close()
        let before = try RecordFormatTests.rawFields(path)

        let response = Self.response(try Self.elements(count: records - 2))
        let persistence = try SQLitePersistence(path: path)
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        let error = #expect(throws: IngestError.self) { try store.ingest(response, endpoint: "/samples") }
        #expect(error?.code == .persistence)
        #expect(store.allIDs() == ["note-before"])
        #expect(store.count == 1)
        #expect(store.collection(displayIdentifier: "/samples") == nil)
        persistence.close()
        #expect(try RecordFormatTests.rawFields(path) == before)

        let cleared = try DatabaseQueue(path: path)
        try cleared.write { db in try db.execute(sql: "DROP TRIGGER fail_once") }
        try cleared.close()
        let reopened = try SQLitePersistence(path: path)
        defer { reopened.close() }
        #expect(try reopened.verify().isOK)
        let again = Store(registry: try sampleRegistry(), persistence: reopened)
        #expect(again.allIDs() == ["note-before"])
        try again.ingest(response, endpoint: "/samples")
        #expect(again.count == records + 1)
        #expect(again.entity(EntityID<Sample>("sm-\(failingAt)"))?.text.hasSuffix(" \(failingAt)") == true)
    }

    /// One record of a big batch that the file could not give back (nested too deep), found by
    /// a worker while the writer inserts the records before it: the whole batch is refused and
    /// nothing of it is written.
    @Test(arguments: [5, 550, 1_199])
    func aBigBatchWithOneUnstorableRecordWritesNothing(at bad: Int) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let persistence = try SQLitePersistence(path: path)
        defer { persistence.close() }
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        var deep = JSONValue.null
        for _ in 0..<JSONLimits.default.maxDepth { deep = .array([deep]) }
        var change = StoreChange()
        for i in 0..<1_200 {
            change.upsert(id: "note-\(i)", fields: ["i": .number(JSONNumber(i)), "v": i == bad ? deep : .null])
        }
        let error = #expect(throws: StoreWriteError.self) { try store.commit(change) }
        #expect((error?.underlying as? SQLiteStoreError)?.code == .unstorable)
        #expect((error?.underlying as? SQLiteStoreError)?.message.contains("note-\(bad):") == true)
        #expect(store.count == 0)
        #expect(try persistence.ids(prefix: nil).isEmpty)
        #expect(try persistence.verify().isOK)
    }
}
