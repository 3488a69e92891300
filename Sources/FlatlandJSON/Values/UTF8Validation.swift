/// Strict UTF-8 validation (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF.
enum UTF8Validation {
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
        var i = 0
        let n = bytes.count
        while i < n {
            // Eight ASCII bytes at a time.
            if i + 8 <= n, bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i += 8
                continue
            }
            if base[i] < 0x80 {
                i += 1
                continue
            }
            let length = sequenceLength(base, at: i, before: n)
            if length == 0 { return false }
            i += length
        }
        return true
    }

    /// The length (2 to 4) of the well-formed UTF-8 sequence that starts with the non-ASCII byte
    /// at `i`, if all of it lies before `stop`; 0 when it is not well-formed (overlong, surrogate,
    /// above U+10FFFF, truncated) or not wholly there yet.
    @inline(__always)
    static func sequenceLength(_ base: UnsafePointer<UInt8>, at i: Int, before stop: Int) -> Int {
        var lo: UInt8 = 0x80
        var hi: UInt8 = 0xBF
        let length: Int
        switch base[i] {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: length = 3
        case 0xED: length = 3; hi = 0x9F
        case 0xF0: length = 4; lo = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; hi = 0x8F
        default: return 0
        }
        guard i &+ length <= stop else { return 0 }
        let c1 = base[i &+ 1]
        guard c1 >= lo, c1 <= hi else { return 0 }
        if length > 2, base[i &+ 2] & 0xC0 != 0x80 { return 0 }
        if length > 3, base[i &+ 3] & 0xC0 != 0x80 { return 0 }
        return length
    }
}
