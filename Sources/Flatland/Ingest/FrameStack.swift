/// The ingestor's stack of open containers, one frame per nesting level.
///
/// Frames are read and written in place through addressors: an `Array` of a struct this large
/// copies the whole frame (and retains every reference in it) when a branch reads one field of it.
final class FrameStack<Frame> {
    private var base: UnsafeMutablePointer<Frame>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 16) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    @inline(__always)
    subscript(i: Int) -> Frame {
        unsafeAddress {
            precondition(i >= 0 && i < count, "frame index out of range")
            return UnsafePointer(base + i)
        }
        unsafeMutableAddress {
            precondition(i >= 0 && i < count, "frame index out of range")
            return base + i
        }
    }

    /// The index of the innermost frame, if any.
    var lastIndex: Int? { count > 0 ? count - 1 : nil }

    @inline(__always)
    func append(_ frame: consuming Frame) {
        if count == capacity { grow() }
        (base + count).initialize(to: consume frame)
        count += 1
    }

    @inline(never)
    private func grow() {
        let grown = UnsafeMutablePointer<Frame>.allocate(capacity: capacity * 2)
        grown.moveInitialize(from: base, count: count)
        base.deallocate()
        base = grown
        capacity *= 2
    }

    func removeLast() -> Frame {
        precondition(count > 0, "no frame to remove")
        count -= 1
        return (base + count).move()
    }

    /// The first index from `start` whose frame satisfies `predicate`.
    func firstIndex(from start: Int = 0, where predicate: (borrowing Frame) -> Bool) -> Int? {
        var i = start
        while i < count {
            if predicate(base[i]) { return i }
            i += 1
        }
        return nil
    }
}
