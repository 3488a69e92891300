@_spi(FlatlandInternal) import FlatlandJSON

/// Records by id, kept in one array in the order they were added, with a hash index of
/// positions into it. A response's batch gathers its drafts here and an empty in-memory store
/// takes the whole table over as its records.
///
/// Why not a `Dictionary<RecordKey, EntityBox>`: a batch must find an id met again from its
/// bytes, before they are made a `String` (which a dictionary cannot do, so a second index of the
/// same drafts was needed beside it), and a store of tens of thousands of records is freed in
/// the dictionary's bucket order, visiting records scattered over the heap, where the array
/// frees them in the order their memory was allocated.
///
/// Removing a record moves the last one into its place, so the order is the order of addition
/// only until the first removal. Positions are 32-bit: up to 2³¹ − 1 records.
struct RecordTable: Sendable {
    /// The records.
    private(set) var boxes: ContiguousArray<EntityBox> = []
    /// Built once the table holds ``indexedFrom`` records: a small table (an upsert, a short
    /// response) is searched in order. Each slot also holds its record's address, so that a
    /// lookup goes from the slot to the record without reading ``boxes`` (`boxes` keeps the
    /// records alive; a slot's address is updated wherever `boxes` changes at its position).
    private var index = PositionIndex<BoxAddress>()

    /// A record's address in an index slot (not a reference: `boxes` owns the record).
    struct BoxAddress: PositionIndexExtra {
        let bits: UInt

        static var none: BoxAddress { BoxAddress(bits: 0) }

        private init(bits: UInt) { self.bits = bits }

        init(_ box: EntityBox) { bits = UInt(bitPattern: Unretained(box).address) }

        @inline(__always)
        private var reference: Unretained<EntityBox> {
            Unretained(address: UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
        }

        /// The record, borrowed from `boxes`.
        @inline(__always)
        func withBox<R>(_ body: (EntityBox) -> R) -> R { reference.with(body) }

        var box: EntityBox { reference.object }
    }

    static let indexedFrom = 16

    var count: Int { boxes.count }
    var isEmpty: Bool { boxes.isEmpty }

    /// The record with this key.
    subscript(key: RecordKey) -> EntityBox? { position(of: key).map { boxes[$0] } }

    /// The record whose id has UTF-8 `bytes` and ``RecordKey`` hash `hash`.
    func box(id bytes: UnsafeRawBufferPointer, hash: Int) -> EntityBox? {
        @inline(__always) func matches(_ box: EntityBox) -> Bool {
            box.key.hash == hash
                && box.key.id.utf8.withContiguousStorageIfAvailable {
                    JSONBytes(unsafeBuffer: bytes).equals(UnsafeRawBufferPointer($0))
                } ?? false
        }
        guard index.isBuilt else { return boxes.first(where: matches) }
        return index.first(hash: hash) { _, address in address.withBox(matches) }?.extra.box
    }

    /// Adds `box` unless a record with its key is there: returns that record (and adds nothing),
    /// or nil when `box` was added. One probe of the index either way.
    mutating func insert(_ box: EntityBox) -> EntityBox? {
        guard index.isBuilt else {
            if let existing = self[box.key] { return existing }
            append(box)
            return nil
        }
        let key = box.key
        let found = index.findOrInsert(hash: key.hash, position: boxes.count, extra: BoxAddress(box)) { _, address in
            address.withBox { $0.key == key }
        }
        if let found { return boxes[found] }
        boxes.append(box)
        return nil
    }

    /// Puts `box` in the place of the record with its key, or adds it. Returns the record replaced.
    @discardableResult
    mutating func put(_ box: EntityBox) -> EntityBox? {
        guard let p = position(of: box.key) else {
            append(box)
            return nil
        }
        let old = boxes[p]
        boxes[p] = box
        if index.isBuilt { index.setExtra(BoxAddress(box), hash: box.key.hash, position: p) }
        return old
    }

    /// Removes the record with this key; the last record takes its place. Returns it.
    mutating func remove(_ key: RecordKey) -> EntityBox? {
        guard let p = position(of: key) else { return nil }
        let last = boxes.count - 1
        if index.isBuilt {
            index.remove(hash: key.hash, position: p)
            // The moved record keeps its address.
            if p != last { index.move(hash: boxes[last].key.hash, from: last, to: p) }
        }
        boxes.swapAt(p, last)
        return boxes.removeLast()
    }

    mutating func reserveCapacity(_ n: Int) {
        boxes.reserveCapacity(n)
        if index.isBuilt {
            index.reserveCapacity(n)
        } else if n >= Self.indexedFrom {
            buildIndex(capacity: n)
        }
    }

    private mutating func append(_ box: EntityBox) {
        boxes.append(box)
        if index.isBuilt {
            index.insert(hash: box.key.hash, position: boxes.count - 1, extra: BoxAddress(box))
        } else if boxes.count == Self.indexedFrom {
            buildIndex(capacity: boxes.count)
        }
    }

    private mutating func buildIndex(capacity: Int) {
        index.reserveCapacity(capacity)
        for p in boxes.indices { index.insert(hash: boxes[p].key.hash, position: p, extra: BoxAddress(boxes[p])) }
    }

    /// The position of the record with this key.
    @inline(__always)
    private func position(of key: RecordKey) -> Int? {
        guard index.isBuilt else { return boxes.firstIndex { $0.key == key } }
        return index.first(hash: key.hash) { _, address in address.withBox { $0.key == key } }?.position
    }
}

/// What a ``PositionIndex`` slot carries beside its entry.
protocol PositionIndexExtra: Sendable {
    /// The value of an empty slot.
    static var none: Self { get }
}

/// No extra word in a ``PositionIndex`` slot.
struct NoExtra: PositionIndexExtra {
    static var none: NoExtra { NoExtra() }
}

/// Open addressing (linear probing) from a hash to positions in a list: the positions stored
/// with a hash are tried in turn until one is the entry.
///
/// A slot's entry is one word: the hash's upper 32 bits (which also choose the slot) and the
/// position + 1 (0 for an empty slot), so that a probe reads one cache line, not one for the
/// hashes and one for the positions. The position is then checked against the entry itself. The
/// entry may carry an `Extra` word beside it, read in the same cache line (``RecordTable`` keeps
/// the record's address there, making its slots 16 bytes); ``NoExtra`` takes no room.
///
/// Beside the slots, one byte per slot: 0 where the slot is empty, or 7 more bits of the hash
/// (with the high bit set). A probe walks the bytes and reads a slot only where its byte
/// matches. Most ids a response brings are new, and for them the probe ends at an empty byte:
/// the bytes of a table of 30,000 records (64 KiB) stay in cache, where its slots (1 MiB with
/// record addresses) have left it by the time the next id comes, so the search for a new id
/// costs no miss.
struct PositionIndex<Extra: PositionIndexExtra>: Sendable {
    struct Slot: Sendable {
        /// The hash's upper half and the position + 1; 0 where the slot is empty.
        var entry: UInt64
        var extra: Extra
    }

    private var slots: [Slot] = []
    /// Per slot: 0 (empty) or ``control(_:)`` of the entry's hash.
    private var controls: [UInt8] = []
    private var count = 0

    var isBuilt: Bool { !slots.isEmpty }

    @inline(__always)
    private static func tag(_ hash: Int) -> UInt64 { UInt64(bitPattern: Int64(hash)) &>> 32 }

    @inline(__always)
    private static func entry(_ hash: Int, _ position: Int) -> UInt64 {
        tag(hash) &<< 32 | UInt64(UInt32(truncatingIfNeeded: position + 1))
    }

    /// The byte kept for an entry: the hash's top 7 bits (the slot comes from the bits below
    /// them) and a set high bit. Worked out from the entry alone, so that a rebuild needs no hash.
    @inline(__always)
    private static func control(_ entry: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: entry &>> 57) | 0x80 }

    @inline(__always)
    private static func home(_ entry: UInt64, mask: Int) -> Int { Int(truncatingIfNeeded: entry &>> 32) & mask }

    @inline(__always)
    private static func position(_ entry: UInt64) -> Int { Int(truncatingIfNeeded: entry & 0xFFFF_FFFF) - 1 }

    /// Walks the run of slots from `hash`'s home: the first slot stored with the hash's upper
    /// half whose position and extra word `match`, or nil; and the slot the walk stopped at (the
    /// free one when nil).
    @inline(__always)
    private func probe(hash: Int, _ matches: (Int, Extra) -> Bool) -> (slot: Int, found: Slot?) {
        controls.withUnsafeBufferPointer { controls in
            slots.withUnsafeBufferPointer { slots in
                let mask = slots.count - 1
                let tag = Self.tag(hash)
                let control = Self.control(tag &<< 32)
                var s = Int(truncatingIfNeeded: tag) & mask
                while controls[s] != 0 {
                    if controls[s] == control, slots[s].entry &>> 32 == tag,
                        matches(Self.position(slots[s].entry), slots[s].extra)
                    {
                        return (s, slots[s])
                    }
                    s = (s &+ 1) & mask
                }
                return (s, nil)
            }
        }
    }

    mutating func reserveCapacity(_ n: Int) {
        var size = max(64, slots.count)
        while n * 2 > size { size *= 2 }
        if size > slots.count { rebuild(size: size) }
    }

    mutating func insert(hash: Int, position: Int, extra: Extra) {
        if (count + 1) * 2 > slots.count { rebuild(size: max(64, slots.count * 2)) }
        place(Slot(entry: Self.entry(hash, position), extra: extra))
        count += 1
    }

    /// The position stored with `hash` that `matches`; or, when there is none, `position` is
    /// stored with `hash` and `extra` in the free slot the search ended at, and the result is nil.
    mutating func findOrInsert(hash: Int, position: Int, extra: Extra, _ matches: (Int, Extra) -> Bool) -> Int? {
        // Grown first, so that the search ends where the new entry goes.
        if (count + 1) * 2 > slots.count { rebuild(size: max(64, slots.count * 2)) }
        let (slot, found) = probe(hash: hash, matches)
        if let found { return Self.position(found.entry) }
        set(slot, Slot(entry: Self.entry(hash, position), extra: extra))
        count += 1
        return nil
    }

    /// Removes the entry of `position` (stored with `hash`), shifting back the entries after it
    /// in its run so that every entry stays reachable from its home slot.
    mutating func remove(hash: Int, position: Int) {
        let mask = slots.count - 1
        var hole = slot(of: Self.entry(hash, position))
        var s = (hole &+ 1) & mask
        while controls[s] != 0 {
            let home = Self.home(slots[s].entry, mask: mask)
            // Move `s` into the hole unless its home lies cyclically in (hole, s].
            if (s &- home) & mask >= (s &- hole) & mask {
                set(hole, slots[s])
                hole = s
            }
            s = (s &+ 1) & mask
        }
        slots[hole].entry = 0
        controls[hole] = 0
        count -= 1
    }

    /// Records that the entry stored with `hash` at position `from` is now at `to` (its extra
    /// word stays).
    mutating func move(hash: Int, from: Int, to: Int) {
        slots[slot(of: Self.entry(hash, from))].entry = Self.entry(hash, to)
    }

    /// Replaces the extra word of the entry stored with `hash` at `position`.
    mutating func setExtra(_ extra: Extra, hash: Int, position: Int) {
        slots[slot(of: Self.entry(hash, position))].extra = extra
    }

    @inline(__always)
    private mutating func set(_ slot: Int, _ value: Slot) {
        slots[slot] = value
        controls[slot] = Self.control(value.entry)
    }

    private func slot(of entry: UInt64) -> Int {
        let mask = slots.count - 1
        var s = Self.home(entry, mask: mask)
        while slots[s].entry != entry { s = (s &+ 1) & mask }
        return s
    }

    private mutating func place(_ value: Slot) {
        let mask = slots.count - 1
        var s = Self.home(value.entry, mask: mask)
        while controls[s] != 0 { s = (s &+ 1) & mask }
        set(s, value)
    }

    private mutating func rebuild(size: Int) {
        let old = slots
        slots = Array(repeating: Slot(entry: 0, extra: .none), count: size)
        controls = Array(repeating: 0, count: size)
        for slot in old where slot.entry != 0 { place(slot) }
    }

    /// The position stored with this hash that `matches`, with its extra word. (Only the hash's
    /// upper half is kept: a position of another hash with the same upper half may come too,
    /// rarely, and `matches` tells it apart.)
    @inline(__always)
    func first(hash: Int, where matches: (Int, Extra) -> Bool) -> (position: Int, extra: Extra)? {
        guard isBuilt, let found = probe(hash: hash, matches).found else { return nil }
        return (Self.position(found.entry), found.extra)
    }
}
