/// The decoded records a lazy store keeps in memory: at most `capacity`, least recently used
/// out. Not thread-safe: the store uses it under its lock.
struct RecordCache {
    private struct Node {
        var box: EntityBox?
        var newer = -1
        var older = -1
    }

    /// The most records kept.
    let capacity: Int
    private var nodes: [Node] = []
    private var slots: [String: Int] = [:]
    private var free: [Int] = []
    private var newest = -1
    private var oldest = -1

    init(capacity: Int) { self.capacity = max(0, capacity) }

    /// The number of records kept.
    var count: Int { slots.count }

    /// The record with this id, which becomes the most recently used.
    mutating func get(_ id: String) -> EntityBox? {
        guard let slot = slots[id] else { return nil }
        touch(slot)
        return nodes[slot].box
    }

    /// The record with this id, leaving the order alone.
    func peek(_ id: String) -> EntityBox? { slots[id].flatMap { nodes[$0].box } }

    /// Keeps `box` (replacing any record with its id) as the most recently used.
    mutating func put(_ box: EntityBox) {
        if let slot = slots[box.id] {
            nodes[slot].box = box
            touch(slot)
            return
        }
        guard capacity > 0 else { return }
        if slots.count >= capacity, oldest >= 0, let evicted = nodes[oldest].box {
            remove(evicted.id)
        }
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            nodes[slot] = Node(box: box)
        } else {
            slot = nodes.count
            nodes.append(Node(box: box))
        }
        slots[box.id] = slot
        link(slot)
    }

    /// Forgets the record with this id.
    mutating func remove(_ id: String) {
        guard let slot = slots.removeValue(forKey: id) else { return }
        unlink(slot)
        nodes[slot] = Node()
        free.append(slot)
    }

    /// Forgets everything.
    mutating func removeAll() { self = RecordCache(capacity: capacity) }

    private mutating func touch(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        link(slot)
    }

    private mutating func link(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let (newer, older) = (nodes[slot].newer, nodes[slot].older)
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        nodes[slot].newer = -1
        nodes[slot].older = -1
    }
}
