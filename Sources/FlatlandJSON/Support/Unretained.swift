/// A reference to an object that does not retain it, and lends the object to a closure without
/// a retain and release around the call.
///
/// (SPI: `package` declarations are not inlined into other modules, `public` ones are.)
///
/// This is the one type of the package that reaches an object through `Unmanaged`; the hot
/// paths that must not pay for reference counting (the parser's callbacks, the ingestor's
/// events, entity types and drafts while a response streams in, a record table's index slots)
/// use its safe-looking API instead.
///
/// **Invariant: the object outlives every use of the value.** Whoever makes an `Unretained`
/// keeps its object alive for as long as the value is used, and says at that place who does: the
/// parser lives through every `yajl_parse` that calls back into it; an ingestor is alive while it
/// feeds its parser; the registry keeps every entity type and field box for as long as the types
/// that point to them; a frame keeps its draft; a record table's `boxes` own the records its
/// index points to.
///
/// Debug builds check the invariant: a value made from an object (``init(_:)``) also holds a
/// weak reference to it, and every use traps if the object is gone. A value rebuilt from an
/// address (``init(address:)``), which has nothing to check against, is checked where the
/// address was taken.
@_spi(FlatlandInternal) public struct Unretained<Object: AnyObject> {
    @usableFromInline let unmanaged: Unmanaged<Object>
    #if DEBUG
        @usableFromInline weak var debugObject: Object?
        @usableFromInline let debugChecked: Bool
    #endif

    /// A reference to `object`, which the caller keeps alive for as long as the value is used.
    @inlinable @inline(__always)
    public init(_ object: borrowing Object) {
        // Borrowed: an owned parameter would cost the caller a retain and a release.
        unmanaged = .passUnretained(copy object)
        #if DEBUG
            debugObject = copy object
            debugChecked = true
        #endif
    }

    /// The object at `address` (an ``address`` taken earlier), which is alive for as long as
    /// the value is used.
    @inlinable @inline(__always)
    public init(address: UnsafeRawPointer) {
        unmanaged = .fromOpaque(address)
        #if DEBUG
            debugObject = nil
            debugChecked = false
        #endif
    }

    /// The object's address: for a C context pointer, or a slot that stores it as bits.
    @inlinable @inline(__always)
    public var address: UnsafeMutableRawPointer { unmanaged.toOpaque() }

    /// Calls `body` with the object, borrowed: no retain or release around the call.
    @_transparent
    public func with<Result>(_ body: (Object) throws -> Result) rethrows -> Result {
        #if DEBUG
            precondition(!debugChecked || debugObject != nil, "an Unretained \(Object.self) outlived its object")
        #endif
        return try unmanaged._withUnsafeGuaranteedRef(body)
    }

    /// The object, retained by the caller from here on.
    @inlinable @inline(__always)
    public var object: Object {
        #if DEBUG
            precondition(!debugChecked || debugObject != nil, "an Unretained \(Object.self) outlived its object")
        #endif
        return unmanaged.takeUnretainedValue()
    }

    /// Whether both refer to the same object.
    @inlinable @inline(__always)
    public func refers(to other: Unretained<Object>) -> Bool { unmanaged.toOpaque() == other.unmanaged.toOpaque() }
}

extension Unretained: Sendable where Object: Sendable {}
