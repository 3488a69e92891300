import CFlatlandSIMD

/// The scanner's fast path: a whole 64-byte block at a time, from bit masks of where its quotes,
/// backslashes, brackets, commas, line feeds and non-ASCII bytes are (computed with SIMD
/// instructions by `flatland_classify_block`).
///
/// From the quotes that no backslash escapes, a prefix XOR gives which bytes are inside strings;
/// the rest follows with bit operations, and only brackets, `\u` escapes, non-ASCII characters
/// and what crosses the block's edges are looked at one by one. Whenever a block holds anything
/// the states must see byte by byte (a surrogate escape, invalid UTF-8, a limit reached, an
/// escape cut by the block's end, a form feed), the block is left untouched for them, so every
/// error is found, and located, by the same code as before.
extension StrictScanner {
    /// Scans the 64 bytes at `base + b` (of a chunk of `n` bytes at absolute offset `start`).
    /// Returns false, having changed nothing, when the block needs the byte-by-byte states.
    @inline(__always)
    mutating func scanBlock(_ base: UnsafePointer<UInt8>, at b: Int, count n: Int, start: Int) -> Bool {
        let p = base + b
        let blockStart = start &+ b

        // The end of a UTF-8 sequence that began before the block: checked as the states would.
        var carried: UInt64 = 0
        switch mode {
        case .value, .string:
            break
        case .utf8:
            var lo = utf8Lo
            var hi = utf8Hi
            for k in 0..<utf8Need {
                let c = p[k]
                if blockStart &+ k >= stringStart &+ stringLimit || c < lo || c > hi { return false }
                lo = 0x80
                hi = 0xBF
            }
            carried = (1 << UInt64(utf8Need)) &- 1
        default:
            return false
        }

        var m = flatland_block_masks()
        flatland_classify_block(p, &m)

        // Escapes: the byte after each backslash that is not itself escaped.
        var quotes = m.quote
        if m.backslash != 0 {
            if m.backslash >> 63 != 0 { return false }
            var rest = m.backslash
            var escaped: UInt64 = 0
            while rest != 0 {
                let next = (rest & (0 &- rest)) &<< 1
                escaped |= next
                rest &= ~(next | (next &>> 1))
            }
            quotes &= ~escaped
            var us = escaped
            while us != 0 {
                let k = us.trailingZeroBitCount
                us &= us &- 1
                guard p[k] == UInt8(ascii: "u") else { continue }
                // The four digits must be in the block; a surrogate needs the pairing states.
                guard k &+ 4 < 64, let value = Self.hexValue(p + (k &+ 1)), value & 0xF800 != 0xD800 else {
                    return false
                }
            }
        }

        // Strings: bit i of `inside` is the parity of the unescaped quotes up to byte i, flipped
        // when the block starts in a string. Opening quotes are inside, closing ones are not.
        var inside = quotes
        inside ^= inside &<< 1
        inside ^= inside &<< 2
        inside ^= inside &<< 4
        inside ^= inside &<< 8
        inside ^= inside &<< 16
        inside ^= inside &<< 32
        if mode != .value { inside = ~inside }
        let content = inside & ~quotes
        let outside = ~(inside | quotes)
        let opening = quotes & inside
        let endsInString = inside >> 63 != 0

        // The string open when the block began must stay within its limit.
        if mode != .value {
            let closing = quotes & ~inside
            if closing == 0 {
                if blockStart &+ 64 &- stringStart >= stringLimit { return false }
            } else if blockStart &+ closing.trailingZeroBitCount &- stringStart > stringLimit {
                return false
            }
        }

        // UTF-8: every non-ASCII lead in a string starts a well-formed sequence, and the
        // continuation bytes in strings are exactly those of such sequences.
        let continuation = m.continuation & content
        var straddling = -1
        var straddlingLength = 0
        let leads = m.non_ascii & content & ~m.continuation
        if validateUTF8, leads & (leads &- 1) != 0 || carried != 0, carried == 0 || b >= 4,
            case let verdict = flatland_utf8_block_check(p, b >= 4 ? 1 : 0), verdict >= 0
        {
            // More than one character: the whole block's UTF-8 checked with vector lookups
            // (through the end of a sequence begun before it, from the bytes before the block),
            // leaving only a sequence that the block's end cuts short for the states to finish.
            if verdict != 0 { return false }
            var tail = leads & (0b111 << 61)
            while tail != 0 {
                let k = tail.trailingZeroBitCount
                tail &= tail &- 1
                let length = UTF8Validation.lead(p[k]).length
                guard k &+ length > 64 else { continue }
                // Beyond the chunk as well: the states take it from here, as the loop below would.
                if b &+ k &+ length > n { return false }
                straddling = k
                straddlingLength = length
            }
        } else if validateUTF8, (m.non_ascii & content) | carried != 0 {
            var expected = carried
            var leads = leads
            while leads != 0 {
                let k = leads.trailingZeroBitCount
                leads &= leads &- 1
                let length = UTF8Validation.sequenceLength(base, at: b &+ k, before: n)
                if length == 0 { return false }
                expected |= ((1 << UInt64(length &- 1)) &- 1) << UInt64(k &+ 1)
                if k &+ length > 64 {
                    straddling = k
                    straddlingLength = length
                }
            }
            if continuation != expected { return false }
        }

        if m.vertical_space & outside != 0 { return false }

        // Depth: checked before anything changes.
        let brackets = m.bracket & outside
        var bits = brackets
        var d = depth
        while bits != 0 {
            let k = bits.trailingZeroBitCount
            bits &= bits &- 1
            if p[k] & 0x02 != 0 {  // `{` or `[`
                if d >= maxDepth { return false }
                d &+= 1
            } else if d > 0 {
                d &-= 1
            }
        }

        // A number that went on from before the block, and one that goes on after it.
        var runBefore = 0
        if numberRun > 0 {
            while runBefore < 64, Self.isNumberByte(p[runBefore]) { runBefore &+= 1 }
            if runBefore == 64 || numberRun &+ runBefore > maxNumberLength { return false }
        }
        var runAfter = 0
        if !endsInString, outside >> 63 != 0, Self.isNumberByte(p[63]) {
            var s = 63
            while s > 0, Self.isNumberByte(p[s &- 1]) { s &-= 1 }
            if s == 0 { return false }
            // The run starts at its first digit or minus sign, as in the states.
            while s < 64, Self.valueClass[Int(p[s])] != 9 { s &+= 1 }
            runAfter = 64 &- s
        }

        // Nothing in the block needs the states: commit.
        let expectedKeyBefore = expectKey
        bits = brackets
        while bits != 0 {
            let k = bits.trailingZeroBitCount
            bits &= bits &- 1
            let c = p[k]
            if c & 0x02 != 0 {
                containers.push(isObject: c & 0x20 != 0)
            } else {
                containers.pop()
            }
        }
        let inObject = containers.inObject
        let events = brackets | (m.comma & outside) | opening
        if events != 0 {
            let top = 63 &- events.leadingZeroBitCount
            if opening >> UInt64(top) & 1 != 0 {
                expectKey = false
                if endsInString {
                    // The string still open began with this quote: a key when what came before
                    // it was `{`, or `,` in an object.
                    let before = events & ((1 << UInt64(top)) &- 1)
                    stringIsKey =
                        before == 0
                        ? expectedKeyBefore : Self.keyFollows(p[63 &- before.leadingZeroBitCount], inObject: inObject)
                    stringStart = blockStart &+ top &+ 1
                }
            } else {
                expectKey = Self.keyFollows(p[top], inObject: inObject)
            }
        }

        // (Counting bits is a loop of its own on x86-64 without POPCNT: only when there are any.)
        let feeds = m.line_feed & outside
        if feeds != 0 {
            let last = 63 &- feeds.leadingZeroBitCount
            lines.line &+= feeds.nonzeroBitCount
            lines.lineStart = blockStart &+ last &+ 1
            let after = continuation >> UInt64(last &+ 1)
            lines.extra = after == 0 ? 0 : after.nonzeroBitCount
        } else if continuation != 0 {
            lines.extra &+= continuation.nonzeroBitCount
        }

        numberRun = runAfter
        if straddling >= 0 {
            // A sequence goes on into the next block: leave the states where they would be.
            utf8Need = straddling &+ straddlingLength &- 64
            let column = blockStart &+ straddling &- lines.lineStart &- (lines.extra &- (63 &- straddling)) &+ 1
            utf8Lead = JSONLocation(offset: blockStart &+ straddling, line: lines.line, column: column)
            // Next comes the lead's second byte, with its own range, or a plain continuation.
            let second = UTF8Validation.lead(p[straddling])
            (utf8Lo, utf8Hi) = straddling == 63 ? (second.lo, second.hi) : (0x80, 0xBF)
            mode = .utf8
        } else {
            mode = endsInString ? .string : .value
        }
        return true
    }

    /// Whether a key comes next after the byte `c` (a bracket or a comma) outside strings.
    @inline(__always)
    static func keyFollows(_ c: UInt8, inObject: Bool) -> Bool {
        c == UInt8(ascii: "{") || (c == UInt8(ascii: ",") && inObject)
    }

    /// The value of the four hex digits at `p`, or nil when one is not a hex digit.
    @inline(__always)
    static func hexValue(_ p: UnsafePointer<UInt8>) -> UInt32? {
        var value: UInt32 = 0
        for k in 0..<4 {
            guard let digit = hexDigit(p[k]) else { return nil }
            value = value << 4 | digit
        }
        return value
    }
}
