#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The changes one response makes, gathered while it streams and applied at its end, all at
/// once or not at all.
struct PendingBatch {
    /// One draft per id, the drafts of later objects folded in. It owns the drafts: an empty
    /// in-memory store takes this dictionary over as its records.
    var drafts: [RecordKey: EntityBox] = [:]
    /// The drafts in the order their first object ended, unretained (`drafts` keeps them), so
    /// that dropping the batch does not visit every draft once more.
    private(set) var order: [Unmanaged<EntityBox>] = []

    /// Adds a draft for an id the batch does not hold yet.
    mutating func insert(_ draft: EntityBox) {
        drafts[draft.key] = draft
        appendToOrder(draft)
    }

    /// Whether to tally what an empty store that takes the drafts as its records needs of them,
    /// as each draft joins `order`, while it is in cache (the store would otherwise visit every
    /// record again once it has left the cache): their ids in order, their counts per type, and
    /// the drafts of types with secondary indexes. Set by an ingestor that begins on an empty
    /// in-memory store; a store takes the drafts only from a batch that tallied them.
    var tallies = false
    private(set) var ids: [String] = []
    private(set) var counts = PrefixCounts()
    private var indexed: [Unmanaged<EntityBox>] = []

    private mutating func appendToOrder(_ draft: EntityBox) {
        order.append(.passUnretained(draft))
        if tallies {
            ids.append(draft.id)
            counts.add(draft, 1)
            if let type = draft.type, type.hasIndexes { indexed.append(.passUnretained(draft)) }
        }
        // A small batch (an upsert, a short response) is searched in order, without an index.
        if order.count == Self.indexedFrom {
            for i in order.indices { byID.insert(hash: order[i]._withUnsafeGuaranteedRef(\.key.hash), index: i) }
        } else if order.count > Self.indexedFrom {
            byID.insert(hash: draft.key.hash, index: order.count - 1)
        }
    }

    private static let indexedFrom = 16

    /// Where `order` is by id hash, so that an id met again is found from its bytes, before it
    /// is made a `String` and a key.
    private var byID = OrderIndex()

    /// The draft for the id whose UTF-8 is `bytes` and whose ``RecordKey`` hash is `hash`.
    /// (Mutating only so that the ingestor reaches its batch in place: read from a class's
    /// property, the whole batch would be copied and destroyed for every lookup.)
    mutating func draft(id bytes: UnsafeRawBufferPointer, hash: Int) -> EntityBox? {
        var found: EntityBox?
        func check(_ i: Int) -> Bool {
            let draft = order[i].takeUnretainedValue()
            let same =
                draft.key.hash == hash
                && draft.key.id.utf8.withContiguousStorageIfAvailable { utf8 in
                    utf8.count == bytes.count
                        && (bytes.count == 0 || memcmp(utf8.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
                } ?? false
            if same { found = draft }
            return !same
        }
        if order.count < Self.indexedFrom {
            for i in order.indices where !check(i) { break }
        } else {
            byID.forEach(hash: hash, check)
        }
        return found
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
        for draft in order { try draft._withUnsafeGuaranteedRef { try body($0) } }
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

    /// Adds a completed draft when no data versions are compared: one hash lookup when the id is
    /// new, the usual case.
    mutating func addUnversioned(_ draft: EntityBox) {
        if let previous = drafts.updateValue(draft, forKey: draft.key) {
            drafts[draft.key] = previous
            previous.absorb(draft)
        } else {
            appendToOrder(draft)
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

/// Open addressing from a hash to positions in a list: the positions whose hash matches, tried
/// in turn until `matches` says one is the entry.
struct OrderIndex {
    private var hashes: [Int] = []
    /// Position + 1, or 0 for an empty slot.
    private var positions: [Int32] = []
    private var count = 0

    @inline(__always)
    private static func slot(_ hash: Int, mask: Int) -> Int {
        Int(truncatingIfNeeded: UInt64(bitPattern: Int64(hash)) &>> 32) & mask
    }

    mutating func insert(hash: Int, index: Int) {
        if (count + 1) * 2 > positions.count { grow() }
        place(hash: hash, position: Int32(truncatingIfNeeded: index + 1))
        count += 1
    }

    private mutating func place(hash: Int, position: Int32) {
        let mask = positions.count - 1
        var s = Self.slot(hash, mask: mask)
        while positions[s] != 0 { s = (s &+ 1) & mask }
        hashes[s] = hash
        positions[s] = position
    }

    private mutating func grow() {
        let old = (hashes, positions)
        let size = max(64, positions.count * 2)
        hashes = Array(repeating: 0, count: size)
        positions = Array(repeating: 0, count: size)
        for s in old.1.indices where old.1[s] != 0 { place(hash: old.0[s], position: old.1[s]) }
    }

    /// Calls `body` with each position stored with this hash while it returns true.
    @inline(__always)
    func forEach(hash: Int, _ body: (Int) -> Bool) {
        guard !positions.isEmpty else { return }
        positions.withUnsafeBufferPointer { positions in
            hashes.withUnsafeBufferPointer { hashes in
                let mask = positions.count - 1
                var s = Self.slot(hash, mask: mask)
                while positions[s] != 0 {
                    if hashes[s] == hash, !body(Int(positions[s]) - 1) { return }
                    s = (s &+ 1) & mask
                }
            }
        }
    }
}
