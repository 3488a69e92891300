import GRDB
import Testing

@testable import FlatlandSync

/// Settling a batch reads, for each answered operation, the operations queued behind it on its
/// row: in one statement for the whole run, which must find exactly what one read per
/// operation finds.
@Suite struct SyncQueueLaterTests {
    /// A queue of operations on rows of two tables; returns it in queue order.
    private func queue(_ db: Database, _ rows: [(table: String, item: String, kind: String)]) throws
        -> [SyncOperation]
    {
        for row in rows {
            try db.execute(
                sql: "INSERT INTO flatland_sync_operations (table_name, item_id, kind, key) VALUES (?, ?, ?, ?)",
                arguments: [row.table, row.item, row.kind, "k-\(row.table)-\(row.item)-\(row.kind)"])
        }
        return try SyncQueue.operations(db)
    }

    @Test func oneReadForARunFindsWhatOneReadPerOperationFinds() throws {
        let dbQueue = try DatabaseQueue()
        try dbQueue.write { db in
            try SyncQueue.create(db)
            let all = try queue(
                db,
                [
                    ("todo", "a", "insert"), ("todo", "b", "insert"), ("note", "a", "insert"), ("todo", "c", "update"),
                    ("todo", "a", "update"), ("todo", "b", "delete"), ("note", "a", "update"), ("todo", "a", "delete"),
                    ("todo", "d", "insert"),
                ])
            // Settled together: the first operation of each row, across both tables.
            let run = [all[0], all[1], all[2], all[3], all[8]]
            let batched = try SyncQueue.later(db, after: run)
            let single = try run.map {
                try SyncQueue.later(db, table: $0.table, itemID: $0.itemID, after: $0.sequence)
            }
            #expect(batched == single)
            #expect(
                batched.map { $0.map(\.sequence) } == [
                    [all[4].sequence, all[7].sequence], [all[5].sequence], [all[6].sequence], [], [],
                ])
            #expect(batched[0].map(\.kind) == [.update, .delete])
            // A later operation of the run is behind an earlier one of its row.
            let same = try SyncQueue.later(db, after: [all[0], all[4]])
            #expect(same.map { $0.map(\.sequence) } == [[all[4].sequence, all[7].sequence], [all[7].sequence]])
        }
    }

    @Test func anUnknownKindBehindAnOperationIsRefusedAsOneByOne() throws {
        let dbQueue = try DatabaseQueue()
        try dbQueue.write { db in
            try SyncQueue.create(db)
            let all = try queue(db, [("todo", "a", "insert"), ("todo", "b", "insert")])
            try db.execute(
                sql:
                    "INSERT INTO flatland_sync_operations (table_name, item_id, kind, key) VALUES ('todo', 'a', 'merge', 'k')"
            )
            #expect(throws: SyncError.self) { try SyncQueue.later(db, after: all) }
            #expect(throws: SyncError.self) {
                try SyncQueue.later(db, table: "todo", itemID: "a", after: all[0].sequence)
            }
            // Not behind b: b's read does not meet it.
            #expect(try SyncQueue.later(db, after: [all[1], all[1]]) == [[], []])
        }
    }
}
