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

    /// What a lead byte promises: the length (2 to 4) of its sequence and the range of the byte
    /// after it (narrower than 0x80...0xBF after E0, ED, F0 and F4, which would otherwise begin
    /// overlongs, surrogates or code points above U+10FFFF); length 0 for a byte that never leads.
    @inline(__always)
    static func lead(_ b: UInt8) -> (length: Int, lo: UInt8, hi: UInt8) {
        switch b {
        case 0xC2...0xDF: (2, 0x80, 0xBF)
        case 0xE0: (3, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE, 0xEF: (3, 0x80, 0xBF)
        case 0xED: (3, 0x80, 0x9F)
        case 0xF0: (4, 0x90, 0xBF)
        case 0xF1...0xF3: (4, 0x80, 0xBF)
        case 0xF4: (4, 0x80, 0x8F)
        default: (0, 0, 0)
        }
    }

    /// The length (2 to 4) of the well-formed UTF-8 sequence that starts with the non-ASCII byte
    /// at `i`, if all of it lies before `stop`; 0 when it is not well-formed (overlong, surrogate,
    /// above U+10FFFF, truncated) or not wholly there yet.
    @inline(__always)
    static func sequenceLength(_ base: UnsafePointer<UInt8>, at i: Int, before stop: Int) -> Int {
        let (length, lo, hi) = lead(base[i])
        guard length > 0, i &+ length <= stop else { return 0 }
        let c1 = base[i &+ 1]
        guard c1 >= lo, c1 <= hi else { return 0 }
        if length > 2, base[i &+ 2] & 0xC0 != 0x80 { return 0 }
        if length > 3, base[i &+ 3] & 0xC0 != 0x80 { return 0 }
        return length
    }
}
