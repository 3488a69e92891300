/// A frame that a ``FrameStack`` can reuse: made once per nesting level, then reset in place.
protocol ReusableFrame {
    /// A frame to be reset before use.
    static var blank: Self { get }
}

/// The ingestor's stack of open containers, one frame per nesting level.
///
/// Frames are read and written in place through addressors: an `Array` of a struct this large
/// copies the whole frame (and retains every reference in it) when a branch reads one field of it.
/// A level's frame is made once and reused: ``pushSlot()`` hands back the slot that the last
/// frame of that level left, for the caller to reset in place. Making a new frame for each
/// container instead costs a construction, a copy of the whole frame into the stack (with a
/// retain of every reference in it) and two destructions.
final class FrameStack<Frame: ReusableFrame> {
    private var base: UnsafeMutablePointer<Frame>
    private var capacity: Int
    private(set) var count = 0
    /// Slots holding a frame: the open ones and those of the levels left since.
    private var initialized = 0

    init(capacity: Int = 16) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deinitialize(count: initialized)
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

    /// Opens a level and returns its index. Its frame holds whatever the last frame of this level
    /// left (or is ``ReusableFrame/blank``): the caller resets it.
    @inline(__always)
    func pushSlot() -> Int {
        if count == initialized { makeSlot() }
        count += 1
        return count - 1
    }

    @inline(never)
    private func makeSlot() {
        if count == capacity {
            let grown = UnsafeMutablePointer<Frame>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: base, count: initialized)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        (base + initialized).initialize(to: .blank)
        initialized += 1
    }

    /// Closes the innermost level. Its frame stays readable as ``popped`` until the next push.
    @inline(__always)
    func pop() {
        precondition(count > 0, "no frame to remove")
        count -= 1
    }

    /// The frame of the level closed last, until the next ``pushSlot()`` reuses it.
    var popped: Frame {
        unsafeAddress {
            precondition(count < initialized, "no frame was popped")
            return UnsafePointer(base + count)
        }
        unsafeMutableAddress {
            precondition(count < initialized, "no frame was popped")
            return base + count
        }
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
