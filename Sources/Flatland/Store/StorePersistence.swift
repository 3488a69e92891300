import FlatlandJSON

/// Where a store keeps its records across restarts. The in-memory store needs none.
///
/// A persistence that only writes (this protocol alone) leaves the store holding everything in
/// memory and writing each batch through. One that also reads (``LazyStorePersistence``, such as
/// FlatlandSQLite's) makes the store lazy: records are loaded on first access into a bounded
/// cache, and queries are answered by the persistence.
public protocol StorePersistence: AnyObject, Sendable {
    /// Writes one commit, all of it or nothing (one transaction), and runs `work` inside that
    /// transaction after the batch's rows: if the work throws, the transaction is rolled back.
    ///
    /// The store calls this from its one commit path, one commit at a time and without holding
    /// its read lock: the store's readers keep reading (a lazy store reads through the
    /// persistence, which must let them see the data as it was before the transaction until it
    /// commits).
    ///
    /// - Throws: ``StoreWriteError``: ``StoreWriteError/Code-swift.struct/persistence`` with the
    ///   persistence's own error as ``StoreWriteError/underlying`` when the write fails,
    ///   ``StoreWriteError/Code-swift.struct/transactionWork`` with the work's error when the work
    ///   throws, ``StoreWriteError/Code-swift.struct/unsupportedWork`` when `work` is of a kind
    ///   this persistence does not run. Nothing is written then.
    func write(_ batch: PersistedBatch, alongside work: (any StoreTransactionWork)?) throws(StoreWriteError)
}

extension StorePersistence {
    /// Writes one commit, all of it or nothing (one transaction).
    public func write(_ batch: PersistedBatch) throws(StoreWriteError) { try write(batch, alongside: nil) }
}

/// Work a layer above the store runs inside the persistence transaction of a commit, so its own
/// rows (an operation queue, delta tokens) are written together with the change to the entities,
/// or not at all. Each persistence runs its own kind: FlatlandSQLite's `SQLiteTransactionWork`
/// is a closure given the transaction's database connection. See <doc:WritingToTheStore>.
public protocol StoreTransactionWork: Sendable {}

/// Read access to what a persistence layer holds: the live database, or a consistent snapshot.
///
/// Every list comes sorted by id unless said otherwise. The store calls these under its lock,
/// so a live source never sees a batch half written.
public protocol StoredRecordSource: Sendable {
    /// The record with this id.
    func loadRecord(id: String) throws -> StoredRecord?
    /// The records with these ids that exist, in any order.
    func loadRecords(ids: [String]) throws -> [StoredRecord]
    /// Every record with this prefix.
    func loadRecords(prefix: String) throws -> [StoredRecord]
    /// Whether a record with this id exists.
    func containsRecord(id: String) throws -> Bool
    /// The ids with this prefix, or every id when `prefix` is nil.
    func ids(prefix: String?) throws -> [String]
    /// The ids of records with this prefix written under a class version older than `classVersion`.
    func outdatedIDs(prefix: String, classVersion: Int) throws -> [String]
    /// The number of records with this prefix, or of all records when `prefix` is nil.
    func count(prefix: String?) throws -> Int
    /// The number of records per prefix (prefixes with none left out).
    func countsByPrefix() throws -> [String: Int]
    /// The ids whose secondary index `index` (`"<prefix>.<name>"`) holds `value` (as
    /// ``IndexEntry/value`` spells it).
    func ids(index: String, value: String) throws -> [String]
    /// The collection with this id.
    func collection(id: String) throws -> EntityCollection?
    /// The collection last written with this display identifier.
    func collection(displayIdentifier: String) throws -> EntityCollection?
    /// The collections of this kind (all when nil), in the order they were created.
    func collections(kind: EntityCollection.Kind?) throws -> [EntityCollection]
}

/// A persistence that also reads: the store on top of it loads records lazily.
public protocol LazyStorePersistence: StorePersistence, StoredRecordSource {
    /// How many decoded records the store keeps in memory (least recently used out).
    var cacheCapacity: Int { get }
    /// A source that keeps reading the data as it is now, whatever is written later.
    func makeSnapshot() throws -> any StoredRecordSource
}

/// One record as persistence stores it.
public struct StoredRecord: Sendable, Hashable {
    /// The full id.
    public var id: String
    /// The type prefix.
    public var prefix: String
    /// The schema version the record was written under.
    public var classVersion: Int
    /// The data version, if any.
    public var dataVersion: Double?
    /// The present fields: one JSON object's text (``EntityRecord/fieldsJSON``), or the
    /// compact encoding FlatlandSQLite stores (it begins with byte `0xF1`, which JSON text never
    /// does).
    public var fields: [UInt8]

    /// A stored record.
    public init(id: String, prefix: String, classVersion: Int, dataVersion: Double?, fields: [UInt8]) {
        self.id = id
        self.prefix = prefix
        self.classVersion = classVersion
        self.dataVersion = dataVersion
        self.fields = fields
    }
}

/// One applied batch, as persistence sees it.
public struct PersistedBatch: Sendable {
    /// The records inserted or changed, as they now are.
    public var records: [EntityRecord]
    /// The ids removed.
    public var removed: [String]
    /// The collections created or changed.
    public var collections: [EntityCollection]
    /// The ids of collections removed.
    public var removedCollections: [String]

    init(
        records: [EntityRecord], removed: [String], collections: [EntityCollection], removedCollections: [String] = []
    ) {
        self.records = records
        self.removed = removed
        self.collections = collections
        self.removedCollections = removedCollections
    }
}

/// One secondary-index entry of a record, for persistence.
public struct IndexEntry: Sendable, Hashable {
    /// The index, `"<prefix>.<name>"`.
    public var index: String
    /// The indexed value, spelled as text (equal values give equal text).
    public var value: String
}

extension EntityRecord {
    /// The present fields as one JSON object, written by the one JSON writer (nested entities
    /// as their ids for typed records, as `{"$ref": id}` for untyped ones).
    public var fieldsJSON: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        box.writeFields(to: &writer)
        writer.endObject()
        return writer.bytes
    }

    /// The record's entries in its type's secondary indexes (none for untyped records).
    public var indexEntries: [IndexEntry] {
        guard let type = box.type, type.hasIndexes else { return [] }
        return type.indexEntries(box).map { IndexEntry(index: $0.key, value: $0.value.persistentText) }
    }
}

extension IndexValue {
    /// The value as text for an SQL index. Equal values give equal text; the store checks the
    /// records it loads, so two values that happened to print alike could not be confused.
    var persistentText: String {
        // `String(reflecting:)` of a string is its debug description: in quotes, escaped. A
        // string of printable ASCII with nothing to escape (an email, a code) is spelled the
        // same without asking the runtime to reflect it, which cost more than inserting the row.
        if let string = base as? String,
            string.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x27 && $0 != 0x5C })
        {
            return "\"" + string + "\""
        }
        return String(reflecting: base)
    }
}
