import Flatland
import Foundation
import GRDB

/// Reads a Flatland store through a GRDB reader: the live pool, or a snapshot of it.
final class SQLiteRecordReader: StoredRecordSource, @unchecked Sendable {
    let reader: any DatabaseReader
    let path: String

    init(reader: any DatabaseReader, path: String) {
        self.reader = reader
        self.path = path
    }

    private func read<R>(_ body: (Database) throws -> R) throws(SQLiteStoreError) -> R {
        try SQLiteStoreError.wrap(path: path) { try reader.read(body) }
    }

    /// `[prefix + "-", prefix + ".")`: the ids of one type, as a range of the id index.
    static func range(_ prefix: String) -> StatementArguments { [prefix + "-", prefix + "."] }

    static let recordColumns = "id, type, class_version, data_version, fields"

    static func record(_ row: Row) -> StoredRecord {
        let fields: Data = row[4]
        return StoredRecord(
            id: row[0], prefix: row[1], classVersion: row[2], dataVersion: row[3], fields: [UInt8](fields))
    }

    static func loadRecords(_ db: Database, ids: [String]) throws -> [StoredRecord] {
        let select = try RawStatement(db, sql: "SELECT \(recordColumns) FROM entities WHERE id = ?")
        var found: [StoredRecord] = []
        for id in ids {
            select.reset()
            select.bind(1, id)
            if try select.next() {
                found.append(
                    StoredRecord(
                        id: select.text(0), prefix: select.text(1), classVersion: select.int(2),
                        dataVersion: select.double(3), fields: select.bytes(4)))
            }
        }
        select.reset()
        return found
    }

    func loadRecord(id: String) throws -> StoredRecord? {
        try read { db in try Self.loadRecords(db, ids: [id]).first }
    }

    func loadRecords(ids: [String]) throws -> [StoredRecord] {
        try read { db in try Self.loadRecords(db, ids: ids) }
    }

    func loadRecords(prefix: String) throws -> [StoredRecord] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.recordColumns) FROM entities WHERE id >= ? AND id < ? ORDER BY id",
                arguments: Self.range(prefix)
            ).map(Self.record)
        }
    }

    func containsRecord(id: String) throws -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM entities WHERE id = ?", arguments: [id]) ?? false }
    }

    func ids(prefix: String?) throws -> [String] {
        try read { db in
            guard let prefix else { return try String.fetchAll(db, sql: "SELECT id FROM entities ORDER BY id") }
            return try String.fetchAll(
                db, sql: "SELECT id FROM entities WHERE id >= ? AND id < ? ORDER BY id", arguments: Self.range(prefix))
        }
    }

    func outdatedIDs(prefix: String, classVersion: Int) throws -> [String] {
        try read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM entities WHERE type = ? AND class_version < ? ORDER BY id",
                arguments: [prefix, classVersion])
        }
    }

    func count(prefix: String?) throws -> Int {
        try read { db in
            guard let prefix else {
                return try Int.fetchOne(db, sql: "SELECT coalesce(sum(count), 0) FROM type_counts") ?? 0
            }
            return try Int.fetchOne(db, sql: "SELECT count FROM type_counts WHERE type = ?", arguments: [prefix]) ?? 0
        }
    }

    func countsByPrefix() throws -> [String: Int] {
        try read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT type, count FROM type_counts WHERE count > 0") {
                counts[row[0]] = row[1]
            }
            return counts
        }
    }

    func ids(index: String, value: String) throws -> [String] {
        try read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM entity_index WHERE name = ? AND value = ? ORDER BY id",
                arguments: [index, value])
        }
    }

    static let collectionColumns = "seq, id, display, kind, total, length"

    static func collection(_ db: Database, _ row: Row) throws -> EntityCollection {
        let seq: Int64 = row[0]
        let length: Int = row[5]
        var items = [String?](repeating: nil, count: length)
        let statement = try db.cachedStatement(sql: "SELECT position, item FROM collection_items WHERE seq = ?")
        let cursor = try Row.fetchCursor(statement, arguments: [seq])
        while let item = try cursor.next() {
            let position: Int = item[0]
            if position >= 0, position < length { items[position] = item[1] }
        }
        let kind = EntityCollection.Kind(rawValue: row[3]) ?? .task
        return EntityCollection(id: row[1], displayIdentifier: row[2], kind: kind, items: items, total: row[4])
    }

    func collection(id: String) throws -> EntityCollection? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.collectionColumns) FROM collections WHERE id = ?", arguments: [id]
            ).map { try Self.collection(db, $0) }
        }
    }

    func collection(displayIdentifier: String) throws -> EntityCollection? {
        try read { db in
            try Self.collection(db, displayIdentifier: displayIdentifier)
        }
    }

    static func collection(_ db: Database, displayIdentifier: String) throws -> EntityCollection? {
        try Row.fetchOne(
            db,
            sql: "SELECT \(collectionColumns) FROM collections WHERE display = ? ORDER BY touched DESC LIMIT 1",
            arguments: [displayIdentifier]
        ).map { try collection(db, $0) }
    }

    func collections(kind: EntityCollection.Kind?) throws -> [EntityCollection] {
        try read { db in
            let rows: [Row]
            if let kind {
                rows = try Row.fetchAll(
                    db, sql: "SELECT \(Self.collectionColumns) FROM collections WHERE kind = ? ORDER BY seq",
                    arguments: [kind.rawValue])
            } else {
                rows = try Row.fetchAll(db, sql: "SELECT \(Self.collectionColumns) FROM collections ORDER BY seq")
            }
            return try rows.map { try Self.collection(db, $0) }
        }
    }
}
