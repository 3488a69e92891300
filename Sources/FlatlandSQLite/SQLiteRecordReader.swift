@_spi(FlatlandInternal) import Flatland
import Foundation
import GRDB

/// Reads a Flatland store through a GRDB reader: the live pool, or a snapshot of it.
final class SQLiteRecordReader: StoredRecordSource, Sendable {
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
    static func range(_ prefix: String) -> [any RawBindable] { [prefix + "-", prefix + "."] }

    static let recordColumns = "id, type, class_version, data_version, fields"

    /// The record at the statement's current row (columns as ``recordColumns``).
    static func record(_ row: RawStatement) -> StoredRecord {
        StoredRecord(
            id: row.text(0), prefix: row.text(1), classVersion: row.int(2), dataVersion: row.double(3),
            fields: row.bytes(4))
    }

    static func loadRecords(_ db: Database, ids: [String]) throws -> [StoredRecord] {
        let select = try RawStatement(db, sql: "SELECT \(recordColumns) FROM entities WHERE id = ?")
        defer { select.reset() }
        var found: [StoredRecord] = []
        for id in ids {
            select.bind([id])
            if try select.next() { found.append(record(select)) }
        }
        return found
    }

    func loadRecord(id: String) throws(SQLiteStoreError) -> StoredRecord? {
        try read { db in try Self.loadRecords(db, ids: [id]).first }
    }

    func loadRecords(ids: [String]) throws(SQLiteStoreError) -> [StoredRecord] {
        try read { db in try Self.loadRecords(db, ids: ids) }
    }

    func loadRecords(prefix: String) throws(SQLiteStoreError) -> [StoredRecord] {
        try read { db in
            try RawStatement.all(
                db, "SELECT \(Self.recordColumns) FROM entities WHERE id >= ? AND id < ? ORDER BY id",
                Self.range(prefix), Self.record)
        }
    }

    func containsRecord(id: String) throws(SQLiteStoreError) -> Bool {
        try read { db in try RawStatement.one(db, "SELECT 1 FROM entities WHERE id = ?", [id]) { _ in true } ?? false }
    }

    func ids(prefix: String?) throws(SQLiteStoreError) -> [String] {
        try read { db in
            guard let prefix else {
                return try RawStatement.all(db, "SELECT id FROM entities ORDER BY id") { $0.text(0) }
            }
            return try RawStatement.all(
                db, "SELECT id FROM entities WHERE id >= ? AND id < ? ORDER BY id", Self.range(prefix)
            ) { $0.text(0) }
        }
    }

    func outdatedIDs(prefix: String, classVersion: Int) throws(SQLiteStoreError) -> [String] {
        try read { db in
            try RawStatement.all(
                db, "SELECT id FROM entities WHERE type = ? AND class_version < ? ORDER BY id", [prefix, classVersion]
            ) { $0.text(0) }
        }
    }

    func count(prefix: String?) throws(SQLiteStoreError) -> Int {
        try read { db in
            guard let prefix else {
                return try RawStatement.one(db, "SELECT coalesce(sum(count), 0) FROM type_counts") { $0.int(0) } ?? 0
            }
            return try RawStatement.one(db, "SELECT count FROM type_counts WHERE type = ?", [prefix]) { $0.int(0) } ?? 0
        }
    }

    func countsByPrefix() throws(SQLiteStoreError) -> [String: Int] {
        try read { db in
            let rows = try RawStatement.all(db, "SELECT type, count FROM type_counts WHERE count > 0") {
                ($0.text(0), $0.int(1))
            }
            return Dictionary(rows, uniquingKeysWith: { _, last in last })
        }
    }

    func ids(index: String, value: String) throws(SQLiteStoreError) -> [String] {
        try read { db in
            try RawStatement.all(
                db, "SELECT id FROM entity_index WHERE name = ? AND value = ? ORDER BY id", [index, value]
            ) { $0.text(0) }
        }
    }

    static let collectionColumns = "seq, id, display, kind, total, length, items"

    /// A collection row, before its items are read.
    struct CollectionRow {
        var seq: Int64
        var id: String
        var display: String
        var kind: String
        var total: Int?
        var length: Int
        /// The positions' blob (`CollectionItemsBlob`); nil for a collection written before it.
        var blob: [UInt8]?

        init(_ row: RawStatement) {
            seq = row.int64(0)
            id = row.text(1)
            display = row.text(2)
            kind = row.text(3)
            total = row.optionalInt(4)
            length = row.int(5)
            blob = row.isNull(6) ? nil : row.bytes(6)
        }
    }

    /// A collection row's kind and, unless its items are rows of `collection_items`, its
    /// positions; or what is wrong with it: a kind this build does not know, a damaged blob, or
    /// a blob of another length than the row's (what `verify` reports, and a load throws as
    /// `corrupt`).
    static func parts(_ row: CollectionRow) -> Result<(EntityCollection.Kind, CollectionPositions?), CollectionDamage> {
        guard let kind = EntityCollection.Kind(rawValue: row.kind) else {
            return .failure(CollectionDamage(description: "collection \(row.id): an unknown kind (\(row.kind))"))
        }
        guard let blob = row.blob else { return .success((kind, nil)) }
        guard let positions = CollectionItemsBlob.decode(blob) else {
            return .failure(
                CollectionDamage(description: "collection \(row.id): its items blob is damaged (\(blob.count) bytes)"))
        }
        guard positions.count == row.length else {
            return .failure(
                CollectionDamage(
                    description:
                        "collection \(row.id): its items blob holds \(positions.count) positions, its row says \(row.length)"
                ))
        }
        return .success((kind, positions))
    }

    struct CollectionDamage: Error, CustomStringConvertible {
        var description: String
    }

    /// The collection of a row, with its items.
    /// How many empty positions a collection stored as rows may have after its last item
    /// before its length is taken for damage.
    static let maxTrailingEmptyPositions = 1 << 20

    static func collection(_ db: Database, _ row: CollectionRow) throws -> EntityCollection {
        let kind: EntityCollection.Kind
        let positions: CollectionPositions?
        switch parts(row) {
        case .success(let parts): (kind, positions) = parts
        case .failure(let damage):
            // (Mapped to SQLiteStoreError.corrupt, with the file's path, by the reader.)
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: damage.description)
        }
        if let positions {
            return EntityCollection(
                id: row.id, displayIdentifier: row.display, kind: kind, positions: positions, total: row.total)
        }
        // Written before schema version 3: a row per position, and the list's length (its
        // `items.count`, trailing empty positions included). A length far past the last item
        // is damage, not a list the library made: allocating it would exhaust memory.
        let positioned = try RawStatement.all(
            db, "SELECT position, item FROM collection_items WHERE seq = ?", [row.seq]
        ) { ($0.int(0), $0.text(1)) }
        let last = positioned.reduce(-1) { max($0, $1.0) }
        guard row.length >= 0, row.length - Self.maxTrailingEmptyPositions - 1 <= last else {
            throw DatabaseError(
                resultCode: .SQLITE_CORRUPT,
                message: "collection \(row.id) (stored as rows) has length \(row.length), its last item is at \(last)")
        }
        var items = [String?](repeating: nil, count: row.length)
        for (position, item) in positioned where position >= 0 && position < items.count { items[position] = item }
        return EntityCollection(id: row.id, displayIdentifier: row.display, kind: kind, items: items, total: row.total)
    }

    func collection(id: String) throws(SQLiteStoreError) -> EntityCollection? {
        try read { db in
            try RawStatement.one(
                db, "SELECT \(Self.collectionColumns) FROM collections WHERE id = ?", [id], CollectionRow.init
            ).map { try Self.collection(db, $0) }
        }
    }

    func collection(displayIdentifier: String) throws(SQLiteStoreError) -> EntityCollection? {
        try read { db in
            try Self.collection(db, displayIdentifier: displayIdentifier)
        }
    }

    static func collection(_ db: Database, displayIdentifier: String) throws -> EntityCollection? {
        try RawStatement.one(
            db, "SELECT \(collectionColumns) FROM collections WHERE display = ? ORDER BY touched DESC LIMIT 1",
            [displayIdentifier], CollectionRow.init
        ).map { try collection(db, $0) }
    }

    func collections(kind: EntityCollection.Kind?) throws(SQLiteStoreError) -> [EntityCollection] {
        try read { db in
            let rows: [CollectionRow]
            if let kind {
                rows = try RawStatement.all(
                    db, "SELECT \(Self.collectionColumns) FROM collections WHERE kind = ? ORDER BY seq",
                    [kind.rawValue], CollectionRow.init)
            } else {
                rows = try RawStatement.all(
                    db, "SELECT \(Self.collectionColumns) FROM collections ORDER BY seq", [], CollectionRow.init)
            }
            return try rows.map { try Self.collection(db, $0) }
        }
    }
}
