/// One secondary index of a store: each value, with the ids of the records that hold it.
///
/// Why not a `Dictionary<IndexValue, IDSet>`: a dictionary compares a key with each occupied
/// bucket on its way by copying the bucket's key out, and copying a string value retains it. A
/// table of tens of thousands of values, filled after its strings have left the cache, then
/// spends its time on a cache miss per retain. Here the probe compares the values' hashes,
/// which the index keeps (see ``PositionIndex``), and looks at a value only when they match.
struct IndexTable: Sendable {
    /// The values and their ids, in the order the values were first added.
    private var entries: ContiguousArray<(value: IndexValue, ids: IDSet)> = []
    private var index = PositionIndex<NoExtra>()

    /// Whether no value has an id.
    var isEmpty: Bool { entries.isEmpty }

    /// How many values have ids.
    var count: Int { entries.count }

    /// Adds `id` under `value`.
    mutating func insert(_ id: String, for value: IndexValue) {
        let found = entries.withUnsafeBufferPointer { entries in
            index.findOrInsert(hash: value.hash, position: entries.count, extra: .none) { p, _ in
                entries[p].value == value
            }
        }
        if let found {
            entries[found].ids.insert(id)
        } else {
            entries.append((value, IDSet(id)))
        }
    }

    /// Removes `id` from under `value`. A value left with no ids goes, so that a table of values
    /// that keep changing (a status, a timestamp) does not grow without end.
    mutating func remove(_ id: String, for value: IndexValue) {
        guard let p = position(of: value) else { return }
        entries[p].ids.remove(id)
        guard entries[p].ids.isEmpty else { return }
        // The last entry takes its place.
        let last = entries.count - 1
        index.remove(hash: value.hash, position: p)
        if p != last { index.move(hash: entries[last].value.hash, from: last, to: p) }
        entries.swapAt(p, last)
        entries.removeLast()
    }

    /// The ids under `value`, in no particular order.
    func ids(for value: IndexValue) -> [String] {
        position(of: value).map { entries[$0].ids.ids } ?? []
    }

    /// Adds every id of `other` under its value.
    mutating func formUnion(_ other: IndexTable) {
        for entry in other.entries {
            for id in entry.ids.ids { insert(id, for: entry.value) }
        }
    }

    private func position(of value: IndexValue) -> Int? {
        entries.withUnsafeBufferPointer { entries in
            index.first(hash: value.hash) { p, _ in entries[p].value == value }?.position
        }
    }
}

/// The ids under one index value: most values (an email) have one id, so it is kept inline.
struct IDSet: Sendable {
    private var single: String?
    private var many: Set<String>?

    init() {}

    init(_ id: String) { single = id }

    var isEmpty: Bool { single == nil && many?.isEmpty != false }

    mutating func insert(_ id: String) {
        if many != nil {
            many!.insert(id)
        } else if let single, single != id {
            many = [single, id]
            self.single = nil
        } else {
            single = id
        }
    }

    mutating func remove(_ id: String) {
        if single == id { single = nil }
        many?.remove(id)
    }

    var ids: [String] { many.map { Array($0) } ?? single.map { [$0] } ?? [] }
}
