/// Strict UTF-8 validation (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF.
enum UTF8Validation {
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = bytes.count
        while i < n {
            // Eight ASCII bytes at a time.
            if i + 8 <= n, bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i += 8
                continue
            }
            let b = bytes[i]
            if b < 0x80 {
                i += 1
                continue
            }
            var need = 0
            var lo: UInt8 = 0x80
            var hi: UInt8 = 0xBF
            switch b {
            case 0xC2...0xDF: need = 1
            case 0xE0: need = 2; lo = 0xA0
            case 0xE1...0xEC, 0xEE, 0xEF: need = 2
            case 0xED: need = 2; hi = 0x9F
            case 0xF0: need = 3; lo = 0x90
            case 0xF1...0xF3: need = 3
            case 0xF4: need = 3; hi = 0x8F
            default: return false
            }
            guard i + need < n else { return false }
            for k in 1...need {
                let c = bytes[i + k]
                if c < lo || c > hi { return false }
                lo = 0x80
                hi = 0xBF
            }
            i += need + 1
        }
        return true
    }
}
