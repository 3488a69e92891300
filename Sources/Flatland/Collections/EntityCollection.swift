/// An ordered list of entity ids: what one request returned, or what a paginated endpoint has
/// returned so far.
///
/// Positions are stored compactly: each distinct id once, and a position as a 4-byte index into
/// those ids (a list of distinct ids without gaps needs no index at all). A large page over a
/// bounded set of ids then costs about 4 bytes per position, not a string per position.
/// ``items`` gives the positions as an array, made when it is read; ``count`` and
/// ``subscript(_:)`` read single positions without making it.
public struct EntityCollection: Hashable, Sendable {
    /// The collection's own id (`c-…`).
    public let id: String
    /// The secondary identifier it is found by: a task's uuid, or a non-fielded endpoint.
    public let displayIdentifier: String
    /// What kind of collection this is.
    public let kind: Kind
    /// The positions, compactly (the persistence stores them as they are).
    package internal(set) var positions: CollectionPositions
    /// The total the server reported for a paginated endpoint, or the item count otherwise.
    public internal(set) var total: Int?

    /// What a collection records.
    public enum Kind: String, Hashable, Sendable {
        /// The top-level entities of one response, in document order.
        case task
        /// Everything a (non-fielded) endpoint has returned, at absolute positions.
        case endpoint
    }

    /// A collection; persistence uses this to give back what it stored.
    public init(id: String, displayIdentifier: String, kind: Kind, items: [String?], total: Int?) {
        self.init(
            id: id, displayIdentifier: displayIdentifier, kind: kind, positions: CollectionPositions(items),
            total: total)
    }

    @_spi(FlatlandInternal) public init(
        id: String, displayIdentifier: String, kind: Kind, positions: CollectionPositions, total: Int?
    ) {
        self.id = id
        self.displayIdentifier = displayIdentifier
        self.kind = kind
        self.positions = positions
        self.total = total
    }

    /// The items by position; `nil` where a position is not known yet (a page not fetched) or
    /// holds something that is not an entity. (Made from the compact positions on each read:
    /// use ``count`` and ``subscript(_:)`` for single positions.)
    public internal(set) var items: [String?] {
        get { positions.items }
        set { positions = CollectionPositions(newValue) }
    }

    /// The number of positions (known or not): `items.count`.
    public var count: Int { positions.count }

    /// The id at `position` (`0..<count`), or `nil` where the position is not known or holds no
    /// entity: `items[position]`.
    public subscript(position: Int) -> String? { positions[position] }

    /// The ids of the known items, in order, without gaps.
    public var knownItems: [String] {
        var known: [String] = []
        known.reserveCapacity(positions.count)
        positions.forEach { if let id = $0 { known.append(id) } }
        return known
    }
}

/// The positions of a collection: each distinct id once (``ids``), and each position as an index
/// into them (`0` for no item, `n` for `ids[n - 1]`). While every position holds a different id
/// and none is empty — a task's list, a first page — position `i` simply holds `ids[i]` and no
/// indexes are kept.
@_spi(FlatlandInternal) public struct CollectionPositions: Hashable, Sendable {
    /// The distinct ids, in the order they were first put.
    package private(set) var ids: [String] = []
    /// Each position's index into ``ids`` (plus one; 0: no item), or nil while position `i`
    /// holds `ids[i]`.
    package private(set) var slots: [UInt32]?

    init() {}

    public init(_ items: some Sequence<String?>) {
        var lookup: [String: UInt32] = [:]
        for item in items { append(item, lookup: &lookup) }
    }

    /// Positions holding `ids` in order, which the caller knows to be distinct (a batch's task
    /// items, each listed once).
    init(distinct ids: [String]) {
        self.ids = ids
        shrinkToFit()
    }

    /// Gives back the spare capacity a list grown by appending keeps (up to half of it, after
    /// the array last doubled): for a list made once (a response's task items, a new endpoint
    /// list), not for one that grows page after page, where each shrink would copy it.
    public mutating func shrinkToFit() {
        func exact<T>(_ array: [T]) -> [T] {
            var copy: [T] = []
            copy.reserveCapacity(array.count)
            copy.append(contentsOf: array)
            return copy
        }
        if ids.capacity - ids.count > ids.count / 8 { ids = exact(ids) }
        if let current = slots, current.capacity - current.count > current.count / 8 { slots = exact(current) }
    }

    /// Positions from their stored parts (the persistence's encoding); nil when they do not fit
    /// together (a slot past the ids, ids without slots that are not distinct).
    package init?(ids: [String], slots: [UInt32]?) {
        if let slots {
            guard slots.allSatisfy({ Int($0) <= ids.count }) else { return nil }
        } else {
            guard Set(ids).count == ids.count else { return nil }
        }
        self.ids = ids
        self.slots = slots
    }

    package var count: Int { slots?.count ?? ids.count }

    package subscript(position: Int) -> String? {
        guard let slots else { return ids[position] }
        let slot = slots[position]
        return slot == 0 ? nil : ids[Int(slot) - 1]
    }

    package var items: [String?] {
        guard let slots else { return ids }
        return slots.map { $0 == 0 ? nil : ids[Int($0) - 1] }
    }

    package func forEach(_ body: (String?) -> Void) {
        guard let slots else { return ids.forEach(body) }
        for slot in slots { body(slot == 0 ? nil : ids[Int(slot) - 1]) }
    }

    /// Where each id is in ``ids`` (plus one): what ``append(_:lookup:)`` and
    /// ``set(_:at:lookup:)`` need. Made when a list is changed, not kept with it.
    func makeLookup() -> [String: UInt32] {
        var lookup: [String: UInt32] = [:]
        lookup.reserveCapacity(ids.count)
        for (i, id) in ids.enumerated() { lookup[id] = UInt32(i + 1) }
        return lookup
    }

    /// The slot of `id`, adding it to ``ids`` when new.
    private mutating func slotIndex(of id: String, lookup: inout [String: UInt32]) -> UInt32 {
        if let slot = lookup[id] { return slot }
        ids.append(id)
        let slot = UInt32(ids.count)
        lookup[id] = slot
        return slot
    }

    /// From "position `i` holds `ids[i]`" to explicit slots.
    private mutating func makeSlots() {
        guard slots == nil else { return }
        slots = ids.indices.map { UInt32($0 + 1) }
    }

    mutating func append(_ id: String?, lookup: inout [String: UInt32]) {
        if slots == nil, let id, lookup[id] == nil {
            ids.append(id)
            lookup[id] = UInt32(ids.count)
            return
        }
        makeSlots()
        let slot = id.map { slotIndex(of: $0, lookup: &lookup) } ?? 0
        slots!.append(slot)
    }

    /// Puts `id` at `position`, adding empty positions up to it when it is past the end.
    mutating func set(_ id: String?, at position: Int, lookup: inout [String: UInt32]) {
        if position == count {
            append(id, lookup: &lookup)
            return
        }
        if slots == nil, let id, position < ids.count, ids[position] == id { return }
        makeSlots()
        if position > slots!.count { slots!.append(contentsOf: repeatElement(0, count: position - slots!.count)) }
        let slot = id.map { slotIndex(of: $0, lookup: &lookup) } ?? 0
        if position == slots!.count {
            slots!.append(slot)
        } else {
            slots![position] = slot
        }
    }

    /// Drops the positions from `count` on.
    mutating func truncate(to count: Int) {
        guard count < self.count else { return }
        if slots == nil {
            ids.removeSubrange(count...)
        } else {
            slots!.removeSubrange(count...)
        }
    }

    /// Drops the ids no position holds any more (after positions were overwritten or dropped),
    /// and the slots when every position holds a different id again.
    mutating func compact() {
        guard let slots else { return }
        var used = [Bool](repeating: false, count: ids.count + 1)
        for slot in slots { used[Int(slot)] = true }
        let distinct = used.dropFirst().filter { $0 }.count
        if distinct == slots.count, !used[0] {
            // Every position a different id, none empty: no slots needed.
            let ordered = slots.map { ids[Int($0) - 1] }
            self = CollectionPositions(uncheckedIDs: ordered)
            return
        }
        guard distinct < ids.count else { return }
        var renumbered = [UInt32](repeating: 0, count: ids.count + 1)
        var kept: [String] = []
        kept.reserveCapacity(distinct)
        for (i, id) in ids.enumerated() where used[i + 1] {
            kept.append(id)
            renumbered[i + 1] = UInt32(kept.count)
        }
        ids = kept
        self.slots = slots.map { renumbered[Int($0)] }
    }

    private init(uncheckedIDs: [String]) {
        ids = uncheckedIDs
        slots = nil
    }

    /// Removes the positions holding one of `removed`; returns how many were removed.
    mutating func remove(_ removed: Set<String>) -> Int {
        guard ids.contains(where: removed.contains) else { return 0 }
        let before = count
        let kept = items.filter { $0.map { !removed.contains($0) } ?? true }
        self = CollectionPositions(kept)
        return before - kept.count
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.slots == nil, rhs.slots == nil { return lhs.ids == rhs.ids }
        for i in 0..<lhs.count where lhs[i] != rhs[i] { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        forEach { hasher.combine($0) }
    }
}
