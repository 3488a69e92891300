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
    /// the drafts of types with secondary indexes. Set by an ingestor that begins on an empty
    /// in-memory store; a store takes the drafts only from a batch that tallied them.
    var tallies = false
    private(set) var ids: [String] = []
    private(set) var counts = PrefixCounts()
    private var indexed: [Unmanaged<EntityBox>] = []
    /// How many of `indexed` each type has.
    private var indexedCounts: [(type: ObjectIdentifier, count: Int)] = []

    private mutating func tally(_ draft: EntityBox) {
        guard tallies else { return }
        ids.append(draft.id)
        counts.add(draft, 1)
        if let type = draft.type, type.hasIndexes {
            indexed.append(.passUnretained(draft))
            let id = ObjectIdentifier(type)
            if let i = indexedCounts.firstIndex(where: { $0.type == id }) {
                indexedCounts[i].count += 1
            } else {
                indexedCounts.append((id, 1))
            }
        }
    }

    /// How many drafts of `type` the batch tallied as indexed.
    func indexedCount(of type: EntityType) -> Int {
        indexedCounts.first { $0.type == ObjectIdentifier(type) }?.count ?? 0
    }

    /// The draft for the id whose UTF-8 is `bytes` and whose ``RecordKey`` hash is `hash`: an id
    /// met again is found from its bytes, before it is made a `String` and a key.
    /// (Mutating only so that the ingestor reaches its batch in place: read from a class's
    /// property, the whole batch would be copied and destroyed for every lookup.)
    mutating func draft(id bytes: UnsafeRawBufferPointer, hash: Int) -> EntityBox? {
        drafts.box(id: bytes, hash: hash)
    }

    /// Calls `body` with each draft of a type with secondary indexes, and its type, in order.
    func forEachIndexedDraft(_ body: (EntityBox, EntityType) -> Void) {
        for draft in indexed {
            draft._withUnsafeGuaranteedRef { body($0, $0.type.unsafelyUnwrapped) }
        }
    }

    /// Calls `body` with each draft, in order.
    @inline(__always)
    func forEachDraft(_ body: (EntityBox) throws -> Void) rethrows {
        for draft in drafts.boxes { try body(draft) }
    }

    /// Top-level entities, in document order, each once.
    var taskItems: [String] = []
    var taskItemSet: Set<RecordKey> = []
    /// The first slice found outside entities.
    var slice: Slice?

    struct Slice {
        var offset: Int
        var total: Int?
        var items: [(index: Int, id: String?)]
    }

    mutating func addTaskItem(_ key: RecordKey) {
        if taskItemSet.insert(key).inserted { taskItems.append(key.id) }
    }

    /// Adds a completed draft when no data versions are compared: one probe of the table, which
    /// adds the draft when its id is new, the usual case.
    mutating func addUnversioned(_ draft: EntityBox) {
        if let previous = drafts.insert(draft) {
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
