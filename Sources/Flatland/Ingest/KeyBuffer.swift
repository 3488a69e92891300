import FlatlandJSON

/// The bytes of one key, kept past the parser's callback in storage that is reused: most keys an
/// entity does not declare are never asked for again, so copying them must cost next to nothing.
/// It owns raw memory, so it cannot be copied: it frees that memory when it ends.
struct KeyBuffer: ~Copyable {
    private var base = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 1)
    private var capacity = 64
    private var count = 0

    @inline(__always)
    mutating func set(_ key: UnsafeRawBufferPointer) {
        if key.count > capacity { grow(to: key.count, keeping: 0) }
        if let source = key.baseAddress { base.copyMemory(from: source, byteCount: key.count) }
        count = key.count
    }

    /// Appends `more` after the bytes already set.
    mutating func append(_ more: UnsafeRawBufferPointer) {
        if count + more.count > capacity { grow(to: count + more.count, keeping: count) }
        if let source = more.baseAddress { (base + count).copyMemory(from: source, byteCount: more.count) }
        count += more.count
    }

    /// The bytes set, until the next change.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Room for `needed` bytes, with the first `kept` of the old ones copied over.
    private mutating func grow(to needed: Int, keeping kept: Int) {
        let old = base
        capacity = max(needed, capacity * 2)
        base = .allocate(byteCount: capacity, alignment: 1)
        base.copyMemory(from: old, byteCount: kept)
        old.deallocate()
    }

    var string: String { String(parsedUTF8: UnsafeRawBufferPointer(start: base, count: count)) }

    func equals(_ text: StaticString) -> Bool {
        JSONBytes(unsafeBuffer: UnsafeRawBufferPointer(start: base, count: count)).equals(text)
    }

    deinit { base.deallocate() }
}
