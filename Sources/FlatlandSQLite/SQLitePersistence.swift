import Flatland
import FlatlandJSON
import Foundation
import GRDB
import Synchronization

/// A Flatland store's persistence in one SQLite file per `(user, environment)`.
///
/// Give it to a Flatland `Store` and the store survives restarts and crashes: every ingested
/// batch is written in one transaction, and a store opened on an existing file loads records
/// only as they are read, keeping at most ``cacheCapacity`` of them in memory.
///
/// ```swift
/// let location = SQLiteStoreLocation(directory: supportDirectory, user: "u-42", environment: "production")
/// let persistence = try SQLitePersistence(location: location)
/// let store = Store(registry: registry, persistence: persistence)
/// try store.ingest(responseBytes, endpoint: "/users?offset=0&count=20")
/// // …on logout: wipe in one transaction, then close the file and remove it.
/// try store.removeAll()
/// try persistence.destroy()
/// ```
///
/// (A FlatlandHTTP `Session` does this for you: give it
/// ``SQLitePersistence/sessionStorage(in:options:)``.)
///
/// The file is in WAL mode: one writer (the store's commit, one at a time) and concurrent readers
/// (snapshots). A file is opened once per process; opening it again throws
/// ``SQLiteStoreError/Code-swift.struct/alreadyOpen``. Give a persistence to one store only: the
/// store's cache assumes it is the only writer.
///
/// Ids and every other text (collection items, display identifiers, index values) are stored and
/// read back by their byte length: an id containing U+0000 round-trips whole.
///
/// Every read throws a ``SQLiteStoreError`` on failure, and every write Flatland's
/// `StoreWriteError` over one (a damaged file gives ``SQLiteStoreError/Code-swift.struct/corrupt``,
/// a failing disk ``SQLiteStoreError/Code-swift.struct/ioError``); a record whose stored fields
/// are damaged reads as absent in the store, its error in `Store.lastPersistenceError`.
/// ``verify(quick:)`` checks a whole file. A
/// store opened ``Options/Mode/readOnly`` never writes, so it can be read from a read-only
/// directory or a full disk.
public final class SQLitePersistence: LazyStorePersistence, @unchecked Sendable {
    /// How a store file is opened.
    public struct Options: Sendable {
        /// Whether the file may be written.
        public enum Mode: Sendable, Hashable {
            /// Created if needed, migrated to the current schema, written by the store.
            case readWrite
            /// Only read: the file must exist and be of the current schema; nothing is ever
            /// written to it (not even on close), and writes throw
            /// ``SQLiteStoreError/Code-swift.struct/readOnly``. A file in a directory that
            /// cannot be written (where SQLite cannot make its WAL index) is opened as immutable
            /// when it has no WAL file, so a closed store can be read from read-only media.
            case readOnly
        }

        /// How many decoded records the store keeps in memory (least recently used out).
        public var cacheCapacity: Int
        /// Remove the file (and its WAL and SHM companions) when the persistence is closed or
        /// released: a scratch store.
        public var removeFilesOnClose: Bool
        /// Whether the file may be written.
        public var mode: Mode
        /// The most memory, in bytes, each connection to the file keeps for SQLite's page cache
        /// (8 MiB by default), whatever the file's size. The transaction of a big batch (2,000
        /// records or more) gets 64 MiB, or this if more, and gives it back after its commit.
        public var pageCacheBytes: Int

        /// Options; by default a cache of 10,000 records, a file that stays, read and written,
        /// and 8 MiB of page cache per connection.
        public init(
            cacheCapacity: Int = 10_000, removeFilesOnClose: Bool = false, mode: Mode = .readWrite,
            pageCacheBytes: Int = 8 << 20
        ) {
            self.cacheCapacity = cacheCapacity
            self.removeFilesOnClose = removeFilesOnClose
            self.mode = mode
            self.pageCacheBytes = pageCacheBytes
        }

        /// ``pageCacheBytes`` as `PRAGMA cache_size` takes it: negative KiB, at least 64 KiB.
        var cacheSizePragma: Int { -max(64, pageCacheBytes >> 10) }
        /// The page cache of a big batch's transaction, as `PRAGMA cache_size` takes it.
        var bigBatchCacheSizePragma: Int { min(cacheSizePragma, -65536) }
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
        if options.mode == .readWrite {
            do {
                try FileManager.default.createDirectory(atPath: location.directory, withIntermediateDirectories: true)
            } catch {
                throw SQLiteStoreError(
                    .fileSystem, path: location.path, message: "cannot create the directory: \(error)")
            }
        }
        try self.init(path: location.path, options: options)
    }

    /// Opens (creating if needed, unless read-only) the store file at `path`.
    ///
    /// A file this call creates is removed again when the open fails (a full disk, a directory
    /// that cannot be written): no empty file is left behind. A file that existed is never
    /// removed.
    ///
    /// - Throws: ``SQLiteStoreError``: `notADatabase`, `notFlatland`, `corrupt` or
    ///   `newerSchema` when the file is not one this build can use (it is then left untouched),
    ///   `alreadyOpen` when this process has it open already, `cannotOpen` when a read-only open
    ///   finds no file, `readOnly` when a read-only open finds an older schema, or the
    ///   SQLite failure (`full`, `ioError`, `readOnly`…).
    public init(path: String, options: Options = Options()) throws(SQLiteStoreError) {
        self.path = path
        self.options = options
        cacheCapacity = options.cacheCapacity
        key = OpenFiles.key(for: path)
        try OpenFiles.claim(key, path: path)
        let readOnly = options.mode == .readOnly
        let companions = Self.companions(of: path)
        let existing = companions.filter { FileManager.default.fileExists(atPath: $0) }
        var opened: DatabasePool?
        do throws(SQLiteStoreError) {
            if readOnly && !existing.contains(path) {
                throw SQLiteStoreError(.cannotOpen, path: path, message: "no such file (opened read-only)")
            }
            // Look before writing anything: a file that is not ours is left as it is.
            let openPath = try Self.inspect(path: path, readOnly: readOnly)
            var configuration = Configuration()
            configuration.readonly = readOnly
            configuration.label = "Flatland"
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in
                // Committed batches survive a crash of the process (they are in the log); the log
                // is synced when it is checkpointed, which happens off the ingest path (below).
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
                // A bounded page cache per connection, whatever the file's size: a long run of
                // small commits (a pull's pages) must not end up holding the whole file.
                try db.execute(sql: "PRAGMA cache_size = \(options.cacheSizePragma)")
            }
            let pool = try SQLiteStoreError.wrap(path: path) {
                try DatabasePool(path: openPath, configuration: configuration)
            }
            opened = pool
            if readOnly {
                try SQLiteStoreError.wrap(path: path) {
                    try pool.read { db in try SQLiteSchema.checkCurrent(db, path: path) }
                }
                appliedMigrations = []
            } else {
                appliedMigrations = try SQLiteStoreError.wrap(path: path) {
                    try pool.write { db in try SQLiteSchema.migrate(db, path: path) }
                }
            }
            touched = try SQLiteStoreError.wrap(path: path) {
                try pool.read { db in try Int64.fetchOne(db, sql: "SELECT max(touched) FROM collections") ?? 0 }
            }
            self.pool = pool
            reader = SQLiteRecordReader(reader: pool, path: path)
        } catch {
            try? opened?.close()
            OpenFiles.release(key)
            // Only what this call created goes: never a file that was there before.
            if !readOnly {
                for file in companions where !existing.contains(file) {
                    try? FileManager.default.removeItem(atPath: file)
                }
            }
            throw error
        }
    }

    /// The store file and the companions SQLite may make next to it.
    static func companions(of path: String) -> [String] {
        [path, path + "-wal", path + "-shm", path + "-journal"]
    }

    /// Checks the file without writing (see ``SQLiteSchema/inspect(path:openPath:)``); returns
    /// the path to open it by. Read-only, a file SQLite cannot open because it cannot make the
    /// WAL index next to it (a read-only directory) is opened as immutable, when it has no WAL
    /// file whose commits would then be missed.
    private static func inspect(path: String, readOnly: Bool) throws(SQLiteStoreError) -> String {
        do {
            try SQLiteSchema.inspect(path: path)
            return path
        } catch  where readOnly && (error.code == .readOnly || error.code == .cannotOpen) {
            guard !FileManager.default.fileExists(atPath: path + "-wal") else { throw error }
            let immutable = immutableURI(path)
            try SQLiteSchema.inspect(path: path, openPath: immutable)
            return immutable
        }
    }

    /// A URI opening `path` as immutable: SQLite then takes no locks and makes no WAL index.
    static func immutableURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        return "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?immutable=1"
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
        if options.mode == .readWrite {
            _ = try? pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        }
        try? pool.close()
        if options.mode == .readWrite && FileManager.default.fileExists(atPath: path + "-wal") {
            // GRDB closes the writer before its read-only readers, so the last connection to close
            // could not remove the WAL and SHM files. One plain connection, opened and closed
            // last, does (SQLite removes them only when no other connection has the file open).
            if let queue = try? DatabaseQueue(path: path) { try? queue.close() }
        }
        OpenFiles.release(key)
        if options.removeFilesOnClose { try? Self.removeFiles(atPath: path) }
    }

    /// Reads from the file outside any commit, on a snapshot (WAL mode: never blocked by the
    /// store's writes): for tables kept beside the records, such as a sync queue, whose writes
    /// go through ``SQLiteTransactionWork``.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try database().read(body)
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
        for file in companions(of: path) where FileManager.default.fileExists(atPath: file) {
            do { try FileManager.default.removeItem(atPath: file) } catch {
                throw SQLiteStoreError(.fileSystem, path: file, message: "cannot remove: \(error)")
            }
        }
    }

    // MARK: Metadata

    /// The metadata value stored under `key` (for the sync layer: tokens, cursors).
    public func metadata(forKey key: String) throws(SQLiteStoreError) -> [UInt8]? {
        let pool = try database()
        return try SQLiteStoreError.wrap(path: path) {
            try pool.read { db in
                try RawStatement.one(db, "SELECT value FROM metadata WHERE key = ?", [key]) { $0.bytes(0) }
            }
        }
    }

    /// Stores (or, with nil, removes) a metadata value.
    public func setMetadata(_ value: [UInt8]?, forKey key: String) throws(SQLiteStoreError) {
        let pool = try database()
        try SQLiteStoreError.wrap(path: path) {
            try pool.write { db in
                if let value {
                    try RawStatement.execute(
                        db, "INSERT OR REPLACE INTO metadata (key, value) VALUES (?, ?)", [key, value])
                } else {
                    try RawStatement.execute(db, "DELETE FROM metadata WHERE key = ?", [key])
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

    // MARK: Verifying

    /// Checks the whole file: SQLite's `PRAGMA integrity_check` (every page, every index
    /// against its table; `quick_check` when `quick`, which skips the index comparison and is
    /// several times faster), then Flatland's own counts against its records, every record's
    /// fields against the record encoding (one object, every length in bounds, keys only in
    /// objects, nesting at most 512 deep, text well-formed UTF-8, numbers numbers), and every
    /// collection's row (a known kind, its items blob whole, as long as the row says).
    ///
    /// A file so damaged that the check cannot run reports that as its problem. The store keeps
    /// working while the check runs (it reads on its own connection).
    ///
    /// - Returns: the problems found (``SQLiteIntegrityReport/isOK`` when none); call
    ///   ``SQLiteIntegrityReport/check()`` to throw them instead.
    /// - Throws: ``SQLiteStoreError`` when the check cannot be run at all (a closed store, an
    ///   I/O error).
    public func verify(quick: Bool = false) throws(SQLiteStoreError) -> SQLiteIntegrityReport {
        let pool = try database()
        do {
            let problems = try SQLiteStoreError.wrap(path: path) {
                try pool.read { db in try Self.problems(db, quick: quick) }
            }
            return SQLiteIntegrityReport(path: path, problems: problems)
        } catch  where error.code == .corrupt || error.code == .notADatabase {
            return SQLiteIntegrityReport(path: path, problems: [error.sqliteMessage ?? error.message])
        }
    }

    static func problems(_ db: Database, quick: Bool) throws -> [String] {
        let pragma = quick ? "PRAGMA quick_check(1000)" : "PRAGMA integrity_check(1000)"
        var problems = try RawStatement.all(db, pragma) { $0.text(0) }.filter { $0 != "ok" }
        guard problems.isEmpty else { return problems }
        // The per-type counts are kept by every write; they must match the records.
        let counted = try RawStatement.all(db, "SELECT type, count FROM type_counts WHERE count != 0") {
            ($0.text(0), $0.int(1))
        }
        let actual = try RawStatement.all(db, "SELECT type, count(*) FROM entities GROUP BY type") {
            ($0.text(0), $0.int(1))
        }
        // Every record's fields must be whole in the record encoding (`StoredFields`).
        let records = try RawStatement(db, sql: "SELECT id, fields FROM entities")
        defer { records.reset() }
        records.bind([])
        while try records.next(), problems.count < 1000 {
            if let problem = StoredFields.problem(in: records.bytes(1)) {
                problems.append("record \(records.text(0)): its stored fields are damaged (\(problem))")
            }
        }
        // Every collection's row must read back: a known kind, its blob whole and as long as the
        // row says (a collection still in `collection_items` rows has no blob to check).
        let collections = try RawStatement(
            db, sql: "SELECT \(SQLiteRecordReader.collectionColumns) FROM collections ORDER BY seq")
        defer { collections.reset() }
        collections.bind([])
        while try collections.next(), problems.count < 1000 {
            if case .failure(let damage) = SQLiteRecordReader.parts(SQLiteRecordReader.CollectionRow(collections)) {
                problems.append(damage.description)
            }
        }
        let kept = Dictionary(counted, uniquingKeysWith: { _, last in last })
        let real = Dictionary(actual, uniquingKeysWith: { _, last in last })
        for type in Set(kept.keys).union(real.keys).sorted() where kept[type] != real[type] {
            problems.append(
                "type_counts says \(kept[type] ?? 0) records of type \(type), the entities table holds \(real[type] ?? 0)"
            )
        }
        return problems
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
    /// - Throws: Flatland's `StoreWriteError`: `persistence` with the ``SQLiteStoreError`` as its
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
        let big = batch.records.count >= Self.bigBatchRecords
        defer { if big { shrinkCache(pool) } }
        do {
            written = try pool.write { db in
                // A big batch's pages stay in memory until the commit instead of spilling to the
                // log again and again (the id index takes inserts all over).
                if big { try db.execute(sql: "PRAGMA cache_size = \(options.bigBatchCacheSizePragma)") }
                let bytes = try write(batch, db)
                do { try body?(db) } catch { throw TransactionWorkFailure(error: error) }
                return bytes
            }
        } catch let failure as TransactionWorkFailure {
            throw StoreWriteError(
                .transactionWork, "\(path): the work alongside the commit failed; nothing was written",
                underlying: failure.error)
        } catch let error as SQLiteStoreError {
            throw StoreWriteError(.persistence, "the commit could not be written", underlying: error)
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

    /// Called with the number of records rewritten so far while an open migrates a file's
    /// records to the current format (from inside the migration's transaction): for the crash
    /// tests, which kill a process in the middle of it. Nil (nothing called) by default.
    @_spi(FlatlandInternal) public static var migrationObserver: (@Sendable (Int) -> Void)? {
        get { observer.withLock { $0 } }
        set { observer.withLock { $0 = newValue } }
    }
    private static let observer = Mutex<(@Sendable (Int) -> Void)?>(nil)

    /// Batches of at least this many records get the big batch's cache for their transaction.
    static let bigBatchRecords = 2_000

    /// Gives the writer its normal cache back after a big batch, and the memory with it (a
    /// failure only leaves the memory in use: the batch is written or not already).
    private func shrinkCache(_ pool: DatabasePool) {
        try? pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA cache_size = \(options.cacheSizePragma)")
            try db.execute(sql: "PRAGMA shrink_memory")
        }
    }

    /// Writes the batch; returns about how many bytes it logged.
    private func write(_ batch: PersistedBatch, _ db: Database) throws -> Int {
        var bytes = 0
        var counts: [String: Int] = [:]
        if !batch.records.isEmpty {
            let insert = try RawStatement(
                db,
                sql: """
                    INSERT OR IGNORE INTO entities (id, type, class_version, data_version, fields)
                    VALUES (?, ?, ?, ?, ?)
                    """)
            let update = try RawStatement(
                db, sql: "UPDATE entities SET class_version = ?, data_version = ?, fields = ? WHERE id = ?")
            let index = try RawStatement(
                db, sql: "INSERT OR REPLACE INTO entity_index (id, name, value) VALUES (?, ?, ?)")
            let encoded = EncodedFields(batch.records)
            for (i, record) in batch.records.enumerated() {
                guard let fields = encoded[i] else {
                    let why = StoredFields.unstorable(record) ?? "it cannot be encoded"
                    throw SQLiteStoreError(
                        .unstorable, path: path, message: "record \(record.id): \(why); nothing was written")
                }
                bytes += fields.count + 64
                insert.resetForRebinding()
                insert.bind(1, record.id)
                insert.bind(2, record.prefix)
                insert.bind(3, record.classVersion)
                insert.bind(4, record.dataVersion)
                insert.bind(5, blob: fields)
                try insert.run()
                if insert.changes == 0 {
                    update.resetForRebinding()
                    update.bind(1, record.classVersion)
                    update.bind(2, record.dataVersion)
                    update.bind(3, blob: fields)
                    update.bind(4, record.id)
                    try update.run()
                } else {
                    counts[record.prefix, default: 0] += 1
                }
                for entry in record.indexEntries {
                    index.resetForRebinding()
                    index.bind(1, record.id)
                    index.bind(2, entry.index)
                    index.bind(3, entry.value)
                    try index.run()
                }
            }
        }
        if !batch.removed.isEmpty {
            for id in batch.removed {
                try RawStatement.execute(db, "DELETE FROM entities WHERE id = ?", [id])
                guard db.changesCount > 0 else { continue }
                try RawStatement.execute(db, "DELETE FROM entity_index WHERE id = ?", [id])
                let prefix = id.split(separator: "-", maxSplits: 1).first.map(String.init) ?? id
                counts[prefix, default: 0] -= 1
            }
        }
        if !counts.isEmpty {
            let count = """
                INSERT INTO type_counts (type, count) VALUES (?, ?)
                ON CONFLICT (type) DO UPDATE SET count = count + excluded.count
                """
            for (type, delta) in counts where delta != 0 { try RawStatement.execute(db, count, [type, delta]) }
        }
        for collection in batch.collections {
            try write(collection, db)
            bytes += 64 + collection.count * 4
        }
        for id in batch.removedCollections {
            if let seq = try RawStatement.one(db, "SELECT seq FROM collections WHERE id = ?", [id], { $0.int64(0) }) {
                try RawStatement.execute(db, "DELETE FROM collection_items WHERE seq = ?", [seq])
                try RawStatement.execute(db, "DELETE FROM collections WHERE seq = ?", [seq])
            }
        }
        return bytes + batch.removed.count * 64
    }

    private func write(_ collection: EntityCollection, _ db: Database) throws {
        let stamp = state.withLock {
            touched += 1
            return touched
        }
        let upsert = """
            INSERT INTO collections (id, display, kind, total, length, touched, items) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET display = excluded.display, kind = excluded.kind,
                total = excluded.total, length = excluded.length, touched = excluded.touched, items = excluded.items
            RETURNING seq
            """
        let row = try RawStatement.one(
            db, upsert,
            [
                collection.id, collection.displayIdentifier, collection.kind.rawValue, collection.total,
                collection.count, stamp, CollectionItemsBlob.encode(collection.positions),
            ]
        ) { $0.int64(0) }
        // Rows of the format before the blob, if this collection was written then (one seek
        // into an empty range otherwise).
        if let seq = row { try RawStatement.execute(db, "DELETE FROM collection_items WHERE seq = ?", [seq]) }
    }

    /// The cores a big batch's encoding may use, read once: `activeProcessorCount` reads a
    /// file each time, which cost a small commit more than encoding a record.
    static let cores = ProcessInfo.processInfo.activeProcessorCount

    // MARK: LazyStorePersistence

    // Every read below throws SQLiteStoreError (corrupt, ioError, closed…), never an untyped
    // error: the store turns a failed lazy read into "absent" and remembers it in
    // Store.lastPersistenceError; callers of the persistence itself get the typed error.

    /// A source reading the database as it is now, whatever is written later (a read
    /// transaction on its own connection, kept until the source is released).
    public func makeSnapshot() throws(SQLiteStoreError) -> any StoredRecordSource {
        let pool = try database()
        let snapshot = try SQLiteStoreError.wrap(path: path) { try pool.makeSnapshot() }
        return SQLiteRecordReader(reader: snapshot, path: path)
    }

    public func loadRecord(id: String) throws(SQLiteStoreError) -> StoredRecord? {
        _ = try database()
        return try reader.loadRecord(id: id)
    }

    public func loadRecords(ids: [String]) throws(SQLiteStoreError) -> [StoredRecord] {
        _ = try database()
        return try reader.loadRecords(ids: ids)
    }

    public func loadRecords(prefix: String) throws(SQLiteStoreError) -> [StoredRecord] {
        _ = try database()
        return try reader.loadRecords(prefix: prefix)
    }

    public func containsRecord(id: String) throws(SQLiteStoreError) -> Bool {
        _ = try database()
        return try reader.containsRecord(id: id)
    }

    public func ids(prefix: String?) throws(SQLiteStoreError) -> [String] {
        _ = try database()
        return try reader.ids(prefix: prefix)
    }

    public func outdatedIDs(prefix: String, classVersion: Int) throws(SQLiteStoreError) -> [String] {
        _ = try database()
        return try reader.outdatedIDs(prefix: prefix, classVersion: classVersion)
    }

    public func count(prefix: String?) throws(SQLiteStoreError) -> Int {
        _ = try database()
        return try reader.count(prefix: prefix)
    }

    public func countsByPrefix() throws(SQLiteStoreError) -> [String: Int] {
        _ = try database()
        return try reader.countsByPrefix()
    }

    public func ids(index: String, value: String) throws(SQLiteStoreError) -> [String] {
        _ = try database()
        return try reader.ids(index: index, value: value)
    }

    public func collection(id: String) throws(SQLiteStoreError) -> EntityCollection? {
        _ = try database()
        return try reader.collection(id: id)
    }

    public func collection(displayIdentifier: String) throws(SQLiteStoreError) -> EntityCollection? {
        _ = try database()
        return try reader.collection(displayIdentifier: displayIdentifier)
    }

    public func collections(kind: EntityCollection.Kind?) throws(SQLiteStoreError) -> [EntityCollection] {
        _ = try database()
        return try reader.collections(kind: kind)
    }
}

/// The fields of a batch's records as stored (`StoredFields`: the present fields, no JSON
/// text), read by the writer in order.
///
/// A big batch is encoded by background workers, a chunk of records at a time, while the writer
/// inserts the chunks already encoded: encoding overlaps the inserts instead of preceding them
/// (records are immutable, so the workers read them freely). A small batch is encoded inline.
///
/// Invariants: each element of `rows` is initialized by exactly one worker (chunk `k` by worker
/// `k % workers`) before `ready[k]` is signalled, and read only after the reader waited for
/// `ready[k]`; the storage is deinitialized only once every worker is done (`group`), whatever
/// the writer did meanwhile (a failed insert leaves the loop early).
private final class EncodedFields: @unchecked Sendable {
    /// Records per chunk.
    static let chunk = 128
    /// Batches smaller than this are encoded inline.
    static let threshold = 512

    private let records: [EntityRecord]
    private let rows: UnsafeMutableBufferPointer<[UInt8]?>
    private let ready: [DispatchSemaphore]
    private let group = DispatchGroup()
    /// The chunks the reader has waited for.
    private var waited = 0

    init(_ records: [EntityRecord]) {
        self.records = records
        rows = .allocate(capacity: records.count)
        guard records.count >= Self.threshold else {
            ready = []
            for i in records.indices { (rows.baseAddress! + i).initialize(to: StoredFields.encode(records[i])) }
            waited = Int.max
            return
        }
        let chunks = (records.count + Self.chunk - 1) / Self.chunk
        ready = (0..<chunks).map { _ in DispatchSemaphore(value: 0) }
        let workers = max(1, min(SQLitePersistence.cores, chunks))
        for worker in 0..<workers {
            DispatchQueue.global(qos: .userInitiated).async(group: group) { [self] in
                var k = worker
                while k < chunks {
                    for i in k * Self.chunk..<min(records.count, (k + 1) * Self.chunk) {
                        (rows.baseAddress! + i).initialize(to: StoredFields.encode(records[i]))
                    }
                    ready[k].signal()
                    k += workers
                }
            }
        }
    }

    /// The fields of record `i`, once encoded (`i` in order, from 0); nil when they cannot be kept.
    subscript(i: Int) -> [UInt8]? {
        if waited != Int.max {
            while waited <= i / Self.chunk {
                ready[waited].wait()
                waited += 1
            }
        }
        return rows[i]
    }

    deinit {
        group.wait()
        _ = rows.deinitialize()
        rows.deallocate()
    }
}

/// The store files this process has open: each is opened once.
enum OpenFiles {
    private static let open = Mutex<Set<String>>([])

    /// The file's canonical path (symbolic links resolved), so two spellings are one file.
    static func key(for path: String) -> String {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let directory = url.deletingLastPathComponent().resolvingSymlinksInPath()
        return directory.appendingPathComponent(url.lastPathComponent).path
    }

    static func claim(_ key: String, path: String) throws(SQLiteStoreError) {
        let claimed = open.withLock { $0.insert(key).inserted }
        guard claimed else {
            throw SQLiteStoreError(
                .alreadyOpen, path: path,
                message: "this process already has the store open; a store file is opened once per process")
        }
    }

    static func release(_ key: String) { open.withLock { _ = $0.remove(key) } }

    static func isOpen(_ key: String) -> Bool { open.withLock { $0.contains(key) } }
}
