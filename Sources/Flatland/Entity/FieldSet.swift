/// A set of field indexes (0 to 255) in four machine words: which fields a record holds.
public struct FieldSet: Hashable, Sendable {
    private var w0: UInt64 = 0
    private var w1: UInt64 = 0
    private var w2: UInt64 = 0
    private var w3: UInt64 = 0

    /// The largest number of fields one entity type may declare.
    public static let capacity = 256

    /// An empty set.
    public init() {}

    /// Whether index `i` is in the set.
    @inlinable public func contains(_ i: Int) -> Bool { word(i >> 6) & (1 << UInt64(i & 63)) != 0 }

    @usableFromInline func word(_ k: Int) -> UInt64 {
        switch k {
        case 0: w0
        case 1: w1
        case 2: w2
        default: w3
        }
    }

    /// Adds index `i`.
    public mutating func insert(_ i: Int) {
        let bit: UInt64 = 1 << UInt64(i & 63)
        switch i >> 6 {
        case 0: w0 |= bit
        case 1: w1 |= bit
        case 2: w2 |= bit
        default: w3 |= bit
        }
    }

    /// Adds every index of `other`.
    public mutating func formUnion(_ other: FieldSet) {
        w0 |= other.w0
        w1 |= other.w1
        w2 |= other.w2
        w3 |= other.w3
    }

    /// Whether the set is empty.
    public var isEmpty: Bool { (w0 | w1 | w2 | w3) == 0 }

    /// The indexes, ascending.
    public var indexes: [Int] {
        var result: [Int] = []
        result.reserveCapacity(count)
        forEach { result.append($0) }
        return result
    }

    /// The number of indexes in the set.
    public var count: Int { w0.nonzeroBitCount + w1.nonzeroBitCount + w2.nonzeroBitCount + w3.nonzeroBitCount }

    /// Calls `body` with each index, ascending, without making an array of them.
    @inline(__always)
    func forEach(_ body: (Int) throws -> Void) rethrows {
        for k in 0..<4 {
            var w = word(k)
            while w != 0 {
                try body(k &* 64 &+ w.trailingZeroBitCount)
                w &= w &- 1
            }
        }
    }
}
