@_spi(FlatlandInternal) import FlatlandJSON

/// The changes one response makes, gathered while it streams and applied at its end, all at
/// once or not at all.
struct PendingBatch {
    /// One draft per id, the drafts of later objects folded in, in the order their first object
    /// ended. It owns the drafts: an empty in-memory store takes this table over as its records.
    var drafts = RecordTable()

    /// Adds a draft for an id the batch does not hold yet.
    mutating func insert(_ draft: EntityBox) {
        drafts.put(draft)
        tally(draft)
    }

    /// Whether to tally what an empty store that takes the drafts as its records needs of them,
    /// as each draft joins the batch, while it is in cache (the store would otherwise visit every
    /// record again once it has left the cache): their ids in order, their counts per type, and
    /// the secondary index tables of their types. Set by an ingestor that begins on an empty
    /// in-memory store; a store takes the drafts only from a batch that tallied them.
    var tallies = false
    private(set) var ids: [String] = []
    private(set) var counts = PrefixCounts()
    /// The index tables of the tallied drafts: `prefix.name` of each index, and its table.
    private var indexKeys: [String] = []
    private var indexTables: [IndexTable] = []
    /// Where each indexed type's tables start in ``indexTables``.
    private var indexStarts: [(type: ObjectIdentifier, first: Int)] = []
    /// Tallied drafts whose index values may have changed since (a later object of the response
    /// wrote a field an index reads, or was folded into one): taken out of the tables then, and
    /// put back with their values at the end.
    private var changedIndexed: [ObjectIdentifier: Unretained<EntityBox>] = [:]

    private mutating func tally(_ draft: EntityBox) {
        guard tallies else { return }
        ids.append(draft.id)
        counts.add(draft, 1)
        if let type = draft.type, type.hasIndexes { addIndexEntries(of: draft, type: type) }
    }

    /// The position of `type`'s first table in ``indexTables``, the tables made if need be.
    private mutating func firstIndexTable(of type: EntityType) -> Int {
        let id = ObjectIdentifier(type)
        if let known = indexStarts.first(where: { $0.type == id }) { return known.first }
        let first = indexTables.count
        indexStarts.append((id, first))
        indexKeys.append(contentsOf: type.indexKeys)
        indexTables.append(contentsOf: repeatElement(IndexTable(), count: type.indexKeys.count))
        return first
    }

    private mutating func addIndexEntries(of draft: EntityBox, type: EntityType) {
        var i = firstIndexTable(of: type)
        let id = draft.id
        type.forEachIndexEntry(of: draft) { _, value in
            indexTables[i].insert(id, for: value)
            i += 1
        }
    }

    /// Notes that `draft`, already in the batch, is about to change in a way that may change its
    /// index values.
    mutating func indexedValuesWillChange(_ draft: EntityBox) {
        guard tallies, let type = draft.type, type.hasIndexes,
            changedIndexed.updateValue(Unretained(draft), forKey: ObjectIdentifier(draft)) == nil
        else { return }
        var i = firstIndexTable(of: type)
        let id = draft.id
        type.forEachIndexEntry(of: draft) { _, value in
            indexTables[i].remove(id, for: value)
            i += 1
        }
    }

    /// The index tables of the tallied drafts, complete, by `prefix.name`; the batch keeps none.
    mutating func takeIndexTables() -> [(key: String, table: IndexTable)] {
        for draft in changedIndexed.values {
            draft.with { addIndexEntries(of: $0, type: $0.type.unsafelyUnwrapped) }
        }
        changedIndexed = [:]
        let tables = zip(indexKeys, indexTables).map { (key: $0, table: $1) }
        indexKeys = []
        indexTables = []
        indexStarts = []
        return tables
    }

    /// The draft for the id whose UTF-8 is `bytes` and whose ``RecordKey`` hash is `hash`: an id
    /// met again is found from its bytes, before it is made a `String` and a key.
    /// (Mutating only so that the ingestor reaches its batch in place: read from a class's
    /// property, the whole batch would be copied and destroyed for every lookup.)
    mutating func draft(id bytes: UnsafeRawBufferPointer, hash: Int) -> EntityBox? {
        drafts.box(id: bytes, hash: hash)
    }

    /// Calls `body` with each draft, in order.
    @inline(__always)
    func forEachDraft(_ body: (EntityBox) throws -> Void) rethrows {
        for draft in drafts.boxes { try body(draft) }
    }

    /// Top-level entities, in document order, each once.
    var taskItems: [String] = []
    var taskItemSet: Set<RecordKey> = []
    /// The first page found outside entities (see ``Envelope``).
    var slice: Slice?
    /// Whether the request selected fields (`?fields=`): a response that is not a page is then
    /// a partial view of the endpoint's list, and does not replace it.
    var selectsFields = false

    /// A page: its items at their indexes in the page (nil where an element is not a stored
    /// entity).
    struct Slice {
        var offset: Int
        var total: Int?
        var items: [(index: Int, id: String?)]
        /// The number of elements of the page's items array.
        var count: Int
        var nextLink: String?
    }

    mutating func addTaskItem(_ key: RecordKey) {
        if taskItemSet.insert(key).inserted { taskItems.append(key.id) }
    }

    /// Adds a completed draft when no data versions are compared: one probe of the table, which
    /// adds the draft when its id is new, the usual case.
    mutating func addUnversioned(_ draft: EntityBox) {
        if let previous = drafts.insert(draft) {
            indexedValuesWillChange(previous)
            previous.absorb(draft)
        } else {
            tally(draft)
        }
    }

    /// Adds a completed draft. Returns false when its data version is not newer than the one
    /// it would replace (the pending one, or the store's), and it is skipped.
    mutating func add(_ draft: EntityBox, storeVersion: () -> Double?) -> Bool {
        if let existing = drafts[draft.key] {
            if let incoming = draft.dataVersion,
                let current = existing.dataVersion ?? existing.storedVersion(storeVersion), incoming <= current
            {
                return false
            }
            indexedValuesWillChange(existing)
            existing.absorb(draft)
            return true
        }
        if let incoming = draft.dataVersion, let stored = draft.storedVersion(storeVersion), incoming <= stored {
            return false
        }
        insert(draft)
        return true
    }
}
