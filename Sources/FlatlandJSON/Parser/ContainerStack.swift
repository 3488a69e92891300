/// The open objects and arrays, innermost last: bit `k` of `bits` for level `k + 1` up to 64
/// levels (1 for an object, 0 for an array), deeper ones in `deep`.
///
/// The strict scanner keeps one as it reads brackets; the parser keeps another from libyajl's
/// events, which are the same brackets, so that a chunk the scanner skipped ends with the
/// scanner's stack all the same.
struct ContainerStack: Equatable {
    private(set) var depth = 0
    private var bits: UInt64 = 0
    private var deep: [UInt8] = []

    /// Opens a level.
    @inline(__always)
    mutating func push(isObject: Bool) {
        if depth < 64 {
            let bit: UInt64 = 1 << UInt64(depth)
            bits = isObject ? bits | bit : bits & ~bit
        } else {
            deep.append(isObject ? 1 : 0)
        }
        depth &+= 1
    }

    /// Closes the innermost level, if any (libyajl reports a bracket that closes nothing).
    @inline(__always)
    mutating func pop() {
        guard depth > 0 else { return }
        depth &-= 1
        if depth >= 64 { deep.removeLast() }
    }

    /// Whether the innermost open level is an object.
    var inObject: Bool {
        @inline(__always) get {
            if depth == 0 { return false }
            if depth <= 64 { return bits >> UInt64(depth &- 1) & 1 != 0 }
            return deep.last == 1
        }
    }

    static func == (a: ContainerStack, b: ContainerStack) -> Bool {
        guard a.depth == b.depth, a.deep == b.deep else { return false }
        let used = min(a.depth, 64)
        let mask: UInt64 = used == 64 ? ~0 : (1 << UInt64(used)) &- 1
        return a.bits & mask == b.bits & mask
    }
}
