import Flatland
import FlatlandJSON
import Foundation
import GRDB

/// A Flatland store's persistence in one SQLite file per `(user, environment)`.
///
/// Give it to a ``Flatland/Store`` and the store survives restarts and crashes: every ingested
/// batch is written in one transaction, and a store opened on an existing file loads records
/// only as they are read, keeping at most ``cacheCapacity`` of them in memory.
///
/// ```swift
/// let location = SQLiteStoreLocation(directory: supportDirectory, user: "u-42", environment: "production")
/// let store = Store(registry: registry, persistence: try SQLitePersistence(location: location))
/// try store.ingest(responseBytes, endpoint: "/users?offset=0&count=20")
/// // …on logout:
/// try SQLitePersistence.removeFiles(at: location)
/// ```
///
/// The file is in WAL mode: one writer (the store, under its lock) and concurrent readers
/// (snapshots). A file is opened once per process; opening it again throws
/// ``SQLiteStoreError/Code/alreadyOpen``. Give a persistence to one store only: the store's
/// cache assumes it is the only writer.
public final class SQLitePersistence: LazyStorePersistence, @unchecked Sendable {
    /// How a store file is opened.
    public struct Options: Sendable {
        /// How many decoded records the store keeps in memory (least recently used out).
        public var cacheCapacity: Int
        /// Remove the file (and its WAL and SHM companions) when the persistence is closed or
        /// released: a scratch store.
        public var removeFilesOnClose: Bool

        /// Options; by default a cache of 10,000 records and a file that stays.
        public init(cacheCapacity: Int = 10_000, removeFilesOnClose: Bool = false) {
            self.cacheCapacity = cacheCapacity
            self.removeFilesOnClose = removeFilesOnClose
        }
    }

    /// The database file.
    public let path: String
    /// How many decoded records the store keeps in memory.
    public let cacheCapacity: Int
    /// The migrations this open applied, by name (empty when the file was current).
    public let appliedMigrations: [String]

    private let options: Options
    private let key: String
    private let state = NSLock()
    private var pool: DatabasePool?
    private let reader: SQLiteRecordReader
    /// The last `touched` value given to a collection: which collection of a display
    /// identifier was written last.
    private var touched: Int64
    /// About how many bytes were written to the log since the last checkpoint was scheduled.
    private var logBytes = 0
    /// Log bytes after which a checkpoint is scheduled.
    static let checkpointThreshold = 4 << 20

    /// Opens (creating if needed) the store file of one user in one environment.
    public convenience init(location: SQLiteStoreLocation, options: Options = Options()) throws(SQLiteStoreError) {
        do {
            try FileManager.default.createDirectory(atPath: location.directory, withIntermediateDirectories: true)
        } catch {
            throw SQLiteStoreError(.sqlite, path: location.path, message: "cannot create the directory: \(error)")
        }
        try self.init(path: location.path, options: options)
    }

    /// Opens (creating if needed) the store file at `path`.
    ///
    /// - Throws: ``SQLiteStoreError``: `notADatabase`, `notFlatland`, `corrupt` or
    ///   `newerSchema` when the file is not one this build can use (it is then left untouched),
    ///   `alreadyOpen` when this process has it open already.
    public init(path: String, options: Options = Options()) throws(SQLiteStoreError) {
        self.path = path
        self.options = options
        cacheCapacity = options.cacheCapacity
        key = OpenFiles.key(for: path)
        try OpenFiles.claim(key, path: path)
        var opened: DatabasePool?
        do {
            // Look before writing anything: a file that is not ours is left as it is.
            try SQLiteSchema.inspect(path: path)
            var configuration = Configuration()
            configuration.label = "Flatland"
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in
                // Committed batches survive a crash of the process (they are in the log); the log
                // is synced when it is checkpointed, which happens off the ingest path (below).
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                // A big batch's pages stay in memory until the commit instead of spilling to the
                // log again and again (the id index takes inserts all over).
                try db.execute(sql: "PRAGMA cache_size = -65536")
            }
            let pool = try SQLiteStoreError.wrap(path: path) {
                try DatabasePool(path: path, configuration: configuration)
            }
            opened = pool
            appliedMigrations = try SQLiteStoreError.wrap(path: path) {
                try pool.write { db in try SQLiteSchema.migrate(db, path: path) }
            }
            touched = try SQLiteStoreError.wrap(path: path) {
                try pool.read { db in try Int64.fetchOne(db, sql: "SELECT max(touched) FROM collections") ?? 0 }
            }
            self.pool = pool
            reader = SQLiteRecordReader(reader: pool, path: path)
        } catch {
            try? opened?.close()
            OpenFiles.release(key)
            throw error
        }
    }

    deinit { closeAndRelease() }

    /// Closes the file; later reads and writes throw ``SQLiteStoreError/Code/closed``.
    public func close() { closeAndRelease() }

    /// Closes the file and removes it with its WAL and SHM companions: the wipe on logout.
    public func destroy() throws(SQLiteStoreError) {
        closeAndRelease()
        try Self.removeFiles(atPath: path)
    }

    private func closeAndRelease() {
        let pool: DatabasePool? = state.withLock {
            defer { self.pool = nil }
            return self.pool
        }
        guard let pool else { return }
        // Fold the log into the file, so a closed store is one self-contained file.
        _ = try? pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        try? pool.close()
        OpenFiles.release(key)
        if options.removeFilesOnClose { try? Self.removeFiles(atPath: path) }
    }

    private func database() throws(SQLiteStoreError) -> DatabasePool {
        guard let pool = state.withLock({ pool }) else {
            throw SQLiteStoreError(.closed, path: path, message: "the store was closed")
        }
        return pool
    }

    // MARK: Wiping

    /// Removes a session's store file and its WAL and SHM companions (a logout).
    ///
    /// - Throws: ``SQLiteStoreError/Code/alreadyOpen`` while this process has it open (close
    ///   the store first, or call ``destroy()``).
    public static func removeFiles(at location: SQLiteStoreLocation) throws(SQLiteStoreError) {
        try removeFiles(atPath: location.path)
    }

    /// Removes the store file at `path` and its WAL and SHM companions.
    public static func removeFiles(atPath path: String) throws(SQLiteStoreError) {
        if OpenFiles.isOpen(OpenFiles.key(for: path)) {
            throw SQLiteStoreError(.alreadyOpen, path: path, message: "the store is open: close it before removing it")
        }
        for file in [path, path + "-wal", path + "-shm", path + "-journal"]
        where FileManager.default.fileExists(atPath: file) {
            do { try FileManager.default.removeItem(atPath: file) } catch {
                throw SQLiteStoreError(.sqlite, path: file, message: "cannot remove: \(error)")
            }
        }
    }

    // MARK: Metadata

    /// The metadata value stored under `key` (for the sync layer: tokens, cursors).
    public func metadata(forKey key: String) throws(SQLiteStoreError) -> [UInt8]? {
        let pool = try database()
        return try SQLiteStoreError.wrap(path: path) {
            try pool.read { db in
                try Data.fetchOne(db, sql: "SELECT value FROM metadata WHERE key = ?", arguments: [key]).map {
                    [UInt8]($0)
                }
            }
        }
    }

    /// Stores (or, with nil, removes) a metadata value.
    public func setMetadata(_ value: [UInt8]?, forKey key: String) throws(SQLiteStoreError) {
        let pool = try database()
        try SQLiteStoreError.wrap(path: path) {
            try pool.write { db in
                if let value {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO metadata (key, value) VALUES (?, ?)",
                        arguments: [key, Data(value)])
                } else {
                    try db.execute(sql: "DELETE FROM metadata WHERE key = ?", arguments: [key])
                }
            }
        }
    }

    /// The schema version of the open file.
    public func schemaVersion() throws(SQLiteStoreError) -> Int {
        let pool = try database()
        return try SQLiteStoreError.wrap(path: path) {
            try pool.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
        }
    }

    // MARK: StorePersistence

    /// Writes one commit in one transaction: the batch's rows, then `work`, an
    /// ``SQLiteTransactionWork`` given the transaction's connection. If the work throws, the
    /// transaction is rolled back and neither the batch nor the work's rows are written.
    ///
    /// SQLite's automatic checkpoint would fold the log into the file inside the commit, with
    /// the ingest waiting for its disk syncs. Instead, once a few megabytes were logged, a passive
    /// checkpoint is queued on the writer's queue: the ingest returns as soon as the batch is
    /// committed, and the next write waits for the checkpoint only if it is still running.
    ///
    /// - Throws: ``Flatland/StoreWriteError``: `persistence` with the ``SQLiteStoreError`` as its
    ///   `underlying` error, `transactionWork` with the work's error, `unsupportedWork` for work
    ///   that is not an ``SQLiteTransactionWork``.
    public func write(_ batch: PersistedBatch, alongside work: (any StoreTransactionWork)?) throws(StoreWriteError) {
        var body: (@Sendable (Database) throws -> Void)?
        if let work {
            guard let work = work as? SQLiteTransactionWork else {
                throw StoreWriteError(
                    .unsupportedWork, "\(path): SQLitePersistence runs SQLiteTransactionWork, not \(type(of: work))")
            }
            body = work.body
        }
        let written: Int
        let pool: DatabasePool
        do { pool = try database() } catch {
            throw StoreWriteError(.persistence, "the commit could not be written", underlying: error)
        }
        do {
            written = try pool.write { db in
                let bytes = try write(batch, db)
                do { try body?(db) } catch { throw TransactionWorkFailure(error: error) }
                return bytes
            }
        } catch let failure as TransactionWorkFailure {
            throw StoreWriteError(
                .transactionWork, "\(path): the work alongside the commit failed; nothing was written",
                underlying: failure.error)
        } catch {
            throw StoreWriteError(
                .persistence, "the commit could not be written", underlying: SQLiteStoreError(sqlite: error, path: path)
            )
        }
        let due = state.withLock {
            logBytes += written
            guard logBytes >= Self.checkpointThreshold else { return false }
            logBytes = 0
            return true
        }
        if due { pool.asyncWriteWithoutTransaction { db in _ = try? db.checkpoint(.passive) } }
    }

    /// Writes the batch; returns about how many bytes it logged.
    private func write(_ batch: PersistedBatch, _ db: Database) throws -> Int {
        var bytes = 0
        var counts: [String: Int] = [:]
        if !batch.records.isEmpty {
            let insert = try RawStatement(
                db,
                sql: """
                    INSERT OR IGNORE INTO entities (id, type, class_version, data_version, present, fields)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """)
            let update = try RawStatement(
                db, sql: "UPDATE entities SET class_version = ?, data_version = ?, present = ?, fields = ? WHERE id = ?"
            )
            let index = try RawStatement(
                db, sql: "INSERT OR REPLACE INTO entity_index (id, name, value) VALUES (?, ?, ?)")
            let encoded = Self.encode(batch.records)
            for (record, row) in zip(batch.records, encoded) {
                let (fields, present) = row
                bytes += fields.count + 64
                insert.reset()
                insert.bind(1, record.id)
                insert.bind(2, record.prefix)
                insert.bind(3, record.classVersion)
                insert.bind(4, record.dataVersion)
                insert.bind(5, present)
                insert.bind(6, blob: fields)
                try insert.run()
                if insert.changes == 0 {
                    update.reset()
                    update.bind(1, record.classVersion)
                    update.bind(2, record.dataVersion)
                    update.bind(3, present)
                    update.bind(4, blob: fields)
                    update.bind(5, record.id)
                    try update.run()
                } else {
                    counts[record.prefix, default: 0] += 1
                }
                for entry in record.indexEntries {
                    index.reset()
                    index.bind(1, record.id)
                    index.bind(2, entry.index)
                    index.bind(3, entry.value)
                    try index.run()
                }
            }
        }
        if !batch.removed.isEmpty {
            let delete = try db.cachedStatement(sql: "DELETE FROM entities WHERE id = ?")
            let deleteIndex = try db.cachedStatement(sql: "DELETE FROM entity_index WHERE id = ?")
            for id in batch.removed {
                try delete.execute(arguments: [id])
                guard db.changesCount > 0 else { continue }
                try deleteIndex.execute(arguments: [id])
                let prefix = id.split(separator: "-", maxSplits: 1).first.map(String.init) ?? id
                counts[prefix, default: 0] -= 1
            }
        }
        if !counts.isEmpty {
            let count = try db.cachedStatement(
                sql: """
                    INSERT INTO type_counts (type, count) VALUES (?, ?)
                    ON CONFLICT (type) DO UPDATE SET count = count + excluded.count
                    """)
            for (type, delta) in counts where delta != 0 { try count.execute(arguments: [type, delta]) }
        }
        for collection in batch.collections {
            try write(collection, db)
            bytes += 64 + collection.items.count * 48
        }
        for id in batch.removedCollections {
            if let seq = try Int64.fetchOne(db, sql: "SELECT seq FROM collections WHERE id = ?", arguments: [id]) {
                try db.execute(sql: "DELETE FROM collection_items WHERE seq = ?", arguments: [seq])
                try db.execute(sql: "DELETE FROM collections WHERE seq = ?", arguments: [seq])
            }
        }
        return bytes + batch.removed.count * 64
    }

    private func write(_ collection: EntityCollection, _ db: Database) throws {
        let stamp = state.withLock {
            touched += 1
            return touched
        }
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO collections (id, display, kind, total, length, touched) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET display = excluded.display, kind = excluded.kind,
                    total = excluded.total, length = excluded.length, touched = excluded.touched
                """)
        try upsert.execute(arguments: [
            collection.id, collection.displayIdentifier, collection.kind.rawValue, collection.total,
            collection.items.count, stamp,
        ])
        let seq =
            try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT seq FROM collections WHERE id = ?"), arguments: [collection.id]) ?? 0
        try db.cachedStatement(sql: "DELETE FROM collection_items WHERE seq = ?").execute(arguments: [seq])
        let item = try db.cachedStatement(sql: "INSERT INTO collection_items (seq, position, item) VALUES (?, ?, ?)")
        for (position, id) in collection.items.enumerated() {
            guard let id else { continue }
            try item.execute(arguments: [seq, position, id])
        }
    }

    /// The fields and present keys of each record as stored. A big batch is encoded on every
    /// core: records are immutable, and encoding is most of the work of writing them.
    static func encode(_ records: [EntityRecord]) -> [(fields: [UInt8], present: String)] {
        @Sendable func row(_ record: EntityRecord) -> (fields: [UInt8], present: String) {
            (record.fieldsJSON, presentText(record.presentFields))
        }
        let workers = min(ProcessInfo.processInfo.activeProcessorCount, records.count / 256)
        guard workers > 1 else { return records.map(row) }
        let rows = UnsafeMutableBufferPointer<(fields: [UInt8], present: String)>.allocate(capacity: records.count)
        defer { rows.deallocate() }
        let output = SendablePointer(base: rows.baseAddress!)
        let per = (records.count + workers - 1) / workers
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let range = worker * per..<min(records.count, (worker + 1) * per)
            for i in range { (output.base + i).initialize(to: row(records[i])) }
        }
        let result = Array(rows)
        _ = rows.deinitialize()
        return result
    }

    /// The present fields as a JSON array of keys.
    static func presentText(_ keys: [String]) -> String {
        var writer = JSONWriter()
        writer.beginArray()
        for key in keys { writer.string(key) }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    // MARK: LazyStorePersistence

    /// A source reading the database as it is now, whatever is written later (a read
    /// transaction on its own connection, kept until the source is released).
    public func makeSnapshot() throws -> any StoredRecordSource {
        let pool = try database()
        let snapshot = try SQLiteStoreError.wrap(path: path) { try pool.makeSnapshot() }
        return SQLiteRecordReader(reader: snapshot, path: path)
    }

    public func loadRecord(id: String) throws -> StoredRecord? {
        _ = try database()
        return try reader.loadRecord(id: id)
    }

    public func loadRecords(ids: [String]) throws -> [StoredRecord] {
        _ = try database()
        return try reader.loadRecords(ids: ids)
    }

    public func loadRecords(prefix: String) throws -> [StoredRecord] {
        _ = try database()
        return try reader.loadRecords(prefix: prefix)
    }

    public func containsRecord(id: String) throws -> Bool {
        _ = try database()
        return try reader.containsRecord(id: id)
    }

    public func ids(prefix: String?) throws -> [String] {
        _ = try database()
        return try reader.ids(prefix: prefix)
    }

    public func outdatedIDs(prefix: String, classVersion: Int) throws -> [String] {
        _ = try database()
        return try reader.outdatedIDs(prefix: prefix, classVersion: classVersion)
    }

    public func count(prefix: String?) throws -> Int {
        _ = try database()
        return try reader.count(prefix: prefix)
    }

    public func countsByPrefix() throws -> [String: Int] {
        _ = try database()
        return try reader.countsByPrefix()
    }

    public func ids(index: String, value: String) throws -> [String] {
        _ = try database()
        return try reader.ids(index: index, value: value)
    }

    public func collection(id: String) throws -> EntityCollection? {
        _ = try database()
        return try reader.collection(id: id)
    }

    public func collection(displayIdentifier: String) throws -> EntityCollection? {
        _ = try database()
        return try reader.collection(displayIdentifier: displayIdentifier)
    }

    public func collections(kind: EntityCollection.Kind?) throws -> [EntityCollection] {
        _ = try database()
        return try reader.collections(kind: kind)
    }
}

/// A pointer that worker threads write disjoint elements through.
private struct SendablePointer<Element>: @unchecked Sendable {
    let base: UnsafeMutablePointer<Element>
}

/// The store files this process has open: each is opened once.
enum OpenFiles {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var open: Set<String> = []

    /// The file's canonical path (symbolic links resolved), so two spellings are one file.
    static func key(for path: String) -> String {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let directory = url.deletingLastPathComponent().resolvingSymlinksInPath()
        return directory.appendingPathComponent(url.lastPathComponent).path
    }

    static func claim(_ key: String, path: String) throws(SQLiteStoreError) {
        let claimed = lock.withLock { open.insert(key).inserted }
        guard claimed else {
            throw SQLiteStoreError(
                .alreadyOpen, path: path,
                message: "this process already has the store open; a store file is opened once per process")
        }
    }

    static func release(_ key: String) { lock.withLock { _ = open.remove(key) } }

    static func isOpen(_ key: String) -> Bool { lock.withLock { open.contains(key) } }
}
