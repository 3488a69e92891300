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
        order.append(.passUnretained(draft))
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
            order.append(.passUnretained(draft))
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
