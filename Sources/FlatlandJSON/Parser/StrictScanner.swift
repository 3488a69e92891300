/// The checks that make the parser strict RFC 8259 where libyajl alone is lenient, plus the
/// limits, done in one streaming pass over the raw bytes before libyajl sees them: over every
/// chunk that the parser's fast path does not take, and over the parts of the others that it
/// leaves to the states (see `JSONStreamParser.feedFast`).
///
/// It follows just enough of the grammar to know where strings and comments are: form feed
/// and vertical tab outside strings, invalid UTF-8 (overlongs, encoded surrogates, above U+10FFFF,
/// truncated), lone or inverted `\u` surrogate escapes, a leading byte-order mark, nesting depth,
/// string, key and number lengths. It also tracks lines and columns so that any error can be
/// located.
///
/// Every check is a pure function of the bytes before the point it fires, so the first error
/// and its location do not depend on how the input is split into chunks.
struct StrictScanner {
    enum Mode: UInt8 {
        case value, string, escape, unicode, utf8, afterHigh, afterHighEscape
        case slash, lineComment, blockComment, blockCommentStar
    }

    /// An error found by the scanner: where it was detected (a chunk index: libyajl may read
    /// the bytes before it, and an error of its own there comes first) and what it is.
    struct Failure {
        var detectedAt: Int
        var error: JSONError
    }

    /// The line state at a point: enough to locate any later offset on the same run of bytes.
    struct LineState: Equatable {
        var line = 1
        var lineStart = 0
        var extra = 0

        func location(at offset: Int) -> JSONLocation {
            JSONLocation(offset: offset, line: line, column: offset - lineStart - extra + 1)
        }

        /// Advances over `bytes` that start at absolute offset `start`.
        mutating func advance(over bytes: UnsafeBufferPointer<UInt8>, start: Int) {
            for (i, b) in bytes.enumerated() {
                if b == 0x0A {
                    line += 1
                    lineStart = start + i + 1
                    extra = 0
                } else if b & 0xC0 == 0x80 {
                    extra += 1
                }
            }
        }
    }

    let allowComments: Bool
    let validateUTF8: Bool
    let maxDepth: Int
    let maxStringLength: Int
    let maxKeyLength: Int
    let maxNumberLength: Int
    /// Whether whole blocks may be scanned with bit masks (see ``scanBlock(_:at:count:start:)``).
    var usesBlocks: Bool

    var mode = Mode.value
    /// The mode at the start of the chunk being scanned.
    var chunkMode = Mode.value
    var lines = LineState()
    /// The line state at the start of the chunk being scanned.
    var chunkLines = LineState()

    var containers = ContainerStack()
    var depth: Int { @inline(__always) get { containers.depth } }
    var expectKey = false

    /// Absolute offset of the first content byte of the current string.
    var stringStart = 0
    var stringIsKey = false

    /// Length of the run of number characters (`0-9 + - . e E`) that started with `-` or a digit
    /// and is still going on; 0 outside such a run. libyajl buffers a number that spans chunks
    /// whole, so the limit is checked here, byte by byte, before libyajl sees the excess.
    var numberRun = 0

    var utf8Need = 0
    var utf8Lo: UInt8 = 0x80
    var utf8Hi: UInt8 = 0xBF
    var utf8Lead = JSONLocation(offset: 0, line: 1, column: 1)

    var hexCount = 0
    var hexValue: UInt32 = 0
    var escapeStart = JSONLocation(offset: 0, line: 1, column: 1)
    var pendingHigh = JSONLocation(offset: 0, line: 1, column: 1)

    init(options: JSONParserOptions) {
        allowComments = options.allowComments
        validateUTF8 = !options.replaceInvalidUTF8
        maxDepth = max(0, options.limits.maxDepth)
        // Clamped to 2^60, more bytes than any input can hold, so that the offsets added to them
        // below cannot overflow: a limit of `Int.max` means "no limit".
        func clamped(_ limit: Int) -> Int { min(max(0, limit), 1 << 60) }
        maxStringLength = clamped(options.limits.maxStringLength)
        maxKeyLength = clamped(options.limits.maxKeyLength)
        maxNumberLength = clamped(options.limits.maxNumberLength)
        // A string or number that starts and ends in one block is shorter than 64 bytes, so with
        // limits of at least 64 a block only checks what crosses its edges. Comments need the
        // states.
        usesBlocks = !allowComments && min(maxStringLength, maxKeyLength, maxNumberLength) >= 64
    }

    /// Byte classes outside strings: 0 = nothing to do.
    static let valueClass = ImmortalTable<UInt8>(count: 256, initial: 0) { t in
        t[Int(UInt8(ascii: "\""))] = 1
        t[Int(UInt8(ascii: "{"))] = 2
        t[Int(UInt8(ascii: "["))] = 3
        t[Int(UInt8(ascii: "}"))] = 4
        t[Int(UInt8(ascii: "]"))] = 4
        t[Int(UInt8(ascii: ","))] = 5
        t[0x0A] = 6
        t[0x0B] = 7
        t[0x0C] = 7
        t[Int(UInt8(ascii: "/"))] = 8
        t[Int(UInt8(ascii: "-"))] = 9
        for d in UInt8(ascii: "0")...UInt8(ascii: "9") { t[Int(d)] = 9 }
    }

    /// Byte classes inside strings: 0 = an ordinary byte.
    static let stringClass = ImmortalTable<UInt8>(count: 256, initial: 0) { t in
        t[Int(UInt8(ascii: "\""))] = 1
        t[Int(UInt8(ascii: "\\"))] = 2
        for b in 0x80...0xFF { t[b] = 3 }
    }

    var stringLimit: Int { stringIsKey ? maxKeyLength : maxStringLength }

    mutating func fail(_ code: JSONError.Code, _ message: String, at location: JSONLocation, detectedAt: Int)
        -> Failure
    {
        Failure(detectedAt: detectedAt, error: JSONError(code, message, location: location))
    }

    /// Scans `count` bytes at `base`, which start at absolute offset `start`.
    /// Returns the first error, with the chunk index at which it was detected; bytes before that
    /// index are safe to hand to libyajl.
    ///
    /// Whole 64-byte blocks go through ``scanBlock(_:at:count:start:)`` when it can take them;
    /// the rest, byte by byte, through the states. Both end a block in the same state, so a block
    /// boundary is no different from a chunk boundary.
    mutating func scan(_ base: UnsafePointer<UInt8>, count n: Int, start: Int) -> Failure? {
        beginChunk()
        if start == 0, n > 0, base[0] == 0xEF {
            return fail(
                .syntax, "byte-order mark is not allowed in JSON text", at: lines.location(at: 0), detectedAt: 0)
        }
        return scanRange(base, from: 0, to: n, start: start)
    }

    /// Notes the state at the start of a chunk, which locations within it start from.
    mutating func beginChunk() {
        chunkLines = lines
        chunkMode = mode
    }

    /// Scans the chunk bytes from index `from` to `n`: whole blocks through
    /// ``scanBlock(_:at:count:start:)`` where it can take them, the rest through the states.
    mutating func scanRange(_ base: UnsafePointer<UInt8>, from: Int, to n: Int, start: Int) -> Failure? {
        var i = from
        if usesBlocks {
            while i &+ 64 <= n {
                if !scanBlock(base, at: i, count: n, start: start) {
                    if let f = scanBytes(base, from: i, to: i &+ 64, start: start) { return f }
                }
                i &+= 64
            }
        }
        return scanBytes(base, from: i, to: n, start: start)
    }

    /// Whether the scanner is between tokens: not in a string, a comment or a number.
    var isBetweenTokens: Bool { mode == .value && numberRun == 0 }

    /// Scans from the start of the chunk until the token that was going on when it began (a
    /// string or number) has ended, in steps of 64 bytes. Returns the index where the scanner is
    /// between tokens again (the chunk's length if it never is), or nil after an error.
    mutating func scanHead(_ base: UnsafePointer<UInt8>, count n: Int, start: Int) -> Int? {
        var i = 0
        while i < n, !isBetweenTokens {
            let end = min(n, i &+ 64)
            if scanRange(base, from: i, to: end, start: start) != nil { return nil }
            i = end
        }
        return i
    }

    /// Puts the scanner where libyajl's last event left it: between tokens, with the levels
    /// libyajl reported open, and a key next right after `{`.
    mutating func resume(containers: ContainerStack, afterObjectStart: Bool) {
        mode = .value
        numberRun = 0
        hexCountPaired = false
        self.containers = containers
        expectKey = afterObjectStart
    }

    /// Scans the chunk bytes from index `from` to `n`, byte by byte through the states.
    mutating func scanBytes(_ base: UnsafePointer<UInt8>, from: Int, to n: Int, start: Int) -> Failure? {
        let valueClass = Self.valueClass
        let stringClass = Self.stringClass
        var i = from
        if numberRun > 0 {
            // A number that started before goes on (numberRun > 0 only between chunks or
            // blocks: within them a run ends at its first other byte).
            i = numberStep(base, count: n, from: from)
            if i < 0 { return numberFailure(start: start, index: -1 - i) }
        }
        while i < n {
            switch mode {
            case .value:
                var c: UInt8 = 0
                while i < n {
                    c = valueClass[Int(base[i])]
                    if c != 0 { break }
                    i &+= 1
                }
                if i >= n { return nil }
                switch c {
                case 1:
                    mode = .string
                    stringIsKey = expectKey
                    expectKey = false
                    stringStart = start + i + 1
                case 2, 3:
                    if depth >= maxDepth {
                        // Detected after the bracket: a bracket out of place is libyajl's syntax
                        // error, and one in place stops it at its event (`onEvent`'s check).
                        return fail(
                            .depth, "nesting deeper than \(maxDepth) levels", at: lines.location(at: start + i),
                            detectedAt: i + 1)
                    }
                    containers.push(isObject: c == 2)
                    expectKey = c == 2
                case 4:
                    containers.pop()
                    expectKey = false
                case 5:
                    expectKey = containers.inObject
                case 6:
                    lines.line += 1
                    lines.lineStart = start + i + 1
                    lines.extra = 0
                case 7:
                    let what = base[i] == 0x0C ? "form feed (U+000C)" : "vertical tab (U+000B)"
                    return fail(
                        .syntax, "\(what) is not whitespace in JSON", at: lines.location(at: start + i), detectedAt: i)
                case 9:
                    i = numberStep(base, count: n, from: i)
                    if i < 0 { return numberFailure(start: start, index: -1 - i) }
                    continue
                default:
                    if allowComments { mode = .slash }
                }
                i &+= 1

            case .string:
                let limitIndex = stringStart + stringLimit - start
                let stop = limitIndex < n ? max(limitIndex, i) : n
                var c: UInt8 = 0
                // Eight bytes at a time while none is a quote, a backslash or non-ASCII (SWAR:
                // the lowest flagged byte is always a true match, so no byte is skipped wrongly).
                while i &+ 8 <= stop {
                    let x = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                    let q = x ^ 0x2222_2222_2222_2222
                    let b = x ^ 0x5C5C_5C5C_5C5C_5C5C
                    let flagged =
                        (((q &- 0x0101_0101_0101_0101) & ~q) | ((b &- 0x0101_0101_0101_0101) & ~b) | x)
                        & 0x8080_8080_8080_8080
                    if flagged != 0 {
                        i &+= flagged.trailingZeroBitCount &>> 3
                        break
                    }
                    i &+= 8
                }
                while i < stop {
                    c = stringClass[Int(base[i])]
                    if c != 0 { break }
                    i &+= 1
                }
                if i >= n { return nil }
                if i == stop {
                    // At the length limit: only the closing quote may stand here.
                    if base[i] != UInt8(ascii: "\"") { return lengthFailure(start: start, index: i) }
                    c = 1
                }
                switch c {
                case 1:
                    mode = .value
                case 2:
                    escapeStart = lines.location(at: start + i)
                    mode = .escape
                default:
                    let b = base[i]
                    if validateUTF8 {
                        // A whole, valid sequence before the stop is stepped over at once; anything
                        // else goes through the byte-by-byte states, which report the error.
                        // Runs of them (text in most scripts) are stepped over in this loop.
                        var j = i
                        while j < stop, base[j] >= 0x80 {
                            let length = UTF8Validation.sequenceLength(base, at: j, before: stop)
                            if length == 0 { break }
                            lines.extra &+= length &- 1
                            j &+= length
                        }
                        if j > i {
                            i = j
                            continue
                        }
                        if let f = utf8Lead(b, start: start, index: i) { return f }
                    } else if b & 0xC0 == 0x80 {
                        lines.extra += 1
                    }
                }
                i &+= 1

            case .escape, .unicode, .utf8, .afterHigh, .afterHighEscape:
                if start + i >= stringStart + stringLimit, mode != .afterHigh || base[i] != UInt8(ascii: "\"") {
                    return lengthFailure(start: start, index: i)
                }
                if let f = stringStep(base[i], start: start, index: i) { return f }
                i &+= 1

            case .slash:
                let b = base[i]
                if b == UInt8(ascii: "/") {
                    mode = .lineComment
                    i &+= 1
                } else if b == UInt8(ascii: "*") {
                    mode = .blockComment
                    i &+= 1
                } else {
                    mode = .value  // libyajl reports the error; look at this byte again
                }

            case .lineComment:
                let b = base[i]
                if b == 0x0A {
                    lines.line += 1
                    lines.lineStart = start + i + 1
                    lines.extra = 0
                    mode = .value
                } else if b & 0xC0 == 0x80 {
                    lines.extra += 1
                }
                i &+= 1

            case .blockComment, .blockCommentStar:
                let b = base[i]
                if b == 0x0A {
                    lines.line += 1
                    lines.lineStart = start + i + 1
                    lines.extra = 0
                } else if b & 0xC0 == 0x80 {
                    lines.extra += 1
                }
                if mode == .blockCommentStar, b == UInt8(ascii: "/") {
                    mode = .value
                } else {
                    mode = b == UInt8(ascii: "*") ? .blockCommentStar : .blockComment
                }
                i &+= 1
            }
        }
        return nil
    }

    /// Counts the number characters from `i` on, up to the first other byte (the run is over)
    /// or the end of the chunk (it may go on in the next one). Returns where it stopped, or, when
    /// the run grows longer than the limit, `-1 - index` of the first byte beyond the limit.
    @inline(__always)
    mutating func numberStep(_ base: UnsafePointer<UInt8>, count n: Int, from i: Int) -> Int {
        let tokenClass = Self.tokenClass
        var j = i
        while j < n, tokenClass[Int(base[j])] & 1 != 0 { j &+= 1 }
        let before = numberRun
        numberRun = before &+ (j &- i)
        if numberRun > maxNumberLength { return -1 - (i + (maxNumberLength - before)) }
        if j < n { numberRun = 0 }
        return j
    }

    @inline(never)
    mutating func numberFailure(start: Int, index: Int) -> Failure {
        fail(
            .limit, "number longer than \(maxNumberLength) characters", at: lines.location(at: start + index),
            detectedAt: index)
    }

    /// Bit 0: a byte of a number (`0-9 + - . e E`); bit 1: a byte of a number or a literal
    /// (`true`, `false`, `null`), that is also any ASCII letter.
    static let tokenClass = ImmortalTable<UInt8>(count: 256, initial: 0) { t in
        for b in Array("0123456789+-.eE".utf8) { t[Int(b)] = 3 }
        for b in UInt8(ascii: "a")...UInt8(ascii: "z") where t[Int(b)] == 0 { t[Int(b)] = 2 }
        for b in UInt8(ascii: "A")...UInt8(ascii: "Z") where t[Int(b)] == 0 { t[Int(b)] = 2 }
    }

    @inline(__always)
    static func isNumberByte(_ b: UInt8) -> Bool { tokenClass[Int(b)] & 1 != 0 }

    /// Whether `b` can be part of a number or a literal (`true`, `false`, `null`) token.
    @inline(__always)
    static func isTokenByte(_ b: UInt8) -> Bool { tokenClass[Int(b)] != 0 }

    /// The location of the opening quote of the string still open at the end of the chunk just
    /// scanned (`base`, `n` bytes from absolute offset `chunkStart`), which must be in that chunk.
    /// No line feed is counted inside a string; the continuation bytes after the quote are.
    func openQuoteLocation(_ base: UnsafePointer<UInt8>, count n: Int, chunkStart: Int) -> JSONLocation {
        let quote = stringStart - 1
        var extra = lines.extra
        var o = max(quote + 1, chunkStart)
        while o < chunkStart + n {
            if base[o - chunkStart] & 0xC0 == 0x80 { extra -= 1 }
            o += 1
        }
        return JSONLocation(offset: quote, line: lines.line, column: quote - lines.lineStart - extra + 1)
    }

    /// Whether libyajl accepts `count` bytes of string content that follow this state, which
    /// must be inside a string: no control character and only valid escapes (libyajl checks
    /// those, not the states).
    func libyajlAcceptsStringContent(_ base: UnsafePointer<UInt8>, count n: Int) -> Bool {
        // 0: plain content, 1: after a backslash, 2 ... 5: that many hex digits still to come.
        var state: Int
        switch mode {
        case .escape, .afterHighEscape: state = 1
        case .unicode: state = 1 + 4 - hexCount
        default: state = 0
        }
        for i in 0..<n {
            let b = base[i]
            if b < 0x20 { return false }
            switch state {
            case 0:
                if b == UInt8(ascii: "\\") { state = 1 }
            case 1:
                switch b {
                case UInt8(ascii: "u"): state = 5
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    state = 0
                default: return false
                }
            default:
                guard Self.hexDigit(b) != nil else { return false }
                state = state == 2 ? 0 : state - 1
            }
        }
        return true
    }

    /// Whether the scanner is inside a string (between its quotes).
    var inString: Bool {
        switch mode {
        case .string, .escape, .unicode, .utf8, .afterHigh, .afterHighEscape: true
        default: false
        }
    }

    mutating func lengthFailure(start: Int, index i: Int) -> Failure {
        let what = stringIsKey ? "key" : "string"
        return fail(
            .limit, "\(what) longer than \(stringLimit) bytes", at: lines.location(at: start + i), detectedAt: i)
    }

    /// A byte of string content that is not ASCII: the start of a UTF-8 sequence.
    mutating func utf8Lead(_ b: UInt8, start: Int, index i: Int) -> Failure? {
        utf8Lead = lines.location(at: start + i)
        let lead = UTF8Validation.lead(b)
        guard lead.length > 0 else {
            return fail(.invalidUTF8, invalidUTF8Message(b), at: utf8Lead, detectedAt: i)
        }
        utf8Need = lead.length - 1
        utf8Lo = lead.lo
        utf8Hi = lead.hi
        mode = .utf8
        return nil
    }

    func invalidUTF8Message(_ b: UInt8) -> String {
        switch b {
        case 0x80...0xBF: return "invalid UTF-8: unexpected continuation byte 0x\(hex(b))"
        case 0xC0, 0xC1: return "invalid UTF-8: overlong encoding (lead byte 0x\(hex(b)))"
        default: return "invalid UTF-8: byte 0x\(hex(b)) never appears in UTF-8"
        }
    }

    func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
    }

    /// One byte in the slower string states: escapes, `\u` digits, UTF-8 continuations.
    mutating func stringStep(_ b: UInt8, start: Int, index i: Int) -> Failure? {
        switch mode {
        case .utf8:
            guard b >= utf8Lo, b <= utf8Hi else {
                let message: String
                if b & 0xC0 != 0x80 {
                    message = "invalid UTF-8: truncated multi-byte sequence"
                } else if utf8Lo == 0xA0 || utf8Lo == 0x90 {
                    message = "invalid UTF-8: overlong encoding"
                } else if utf8Hi == 0x9F {
                    message = "invalid UTF-8: encoded surrogate (U+D800 to U+DFFF)"
                } else {
                    message = "invalid UTF-8: code point above U+10FFFF"
                }
                return fail(.invalidUTF8, message, at: utf8Lead, detectedAt: i)
            }
            lines.extra += 1
            utf8Lo = 0x80
            utf8Hi = 0xBF
            utf8Need -= 1
            if utf8Need == 0 { mode = .string }
        case .escape:
            if b == UInt8(ascii: "u") {
                mode = .unicode
                hexCount = 0
                hexValue = 0
            } else {
                mode = .string  // libyajl checks the other escapes
            }
        case .unicode:
            guard let v = Self.hexDigit(b) else {
                mode = .string  // libyajl reports the bad hex digit
                hexCountPaired = false
                return nil
            }
            hexValue = hexValue << 4 | v
            hexCount += 1
            if hexCount == 4 { return surrogateCheck(detectedAt: i) }
        case .afterHigh:
            if b == UInt8(ascii: "\\") {
                escapeStart = lines.location(at: start + i)
                mode = .afterHighEscape
            } else {
                return loneHigh(detectedAt: i)
            }
        case .afterHighEscape:
            if b == UInt8(ascii: "u") {
                mode = .unicode
                hexCount = 0
                hexValue = 0
            } else {
                return loneHigh(detectedAt: i)
            }
        default:
            break
        }
        return nil
    }

    mutating func surrogateCheck(detectedAt i: Int) -> Failure? {
        let isHigh = hexValue >= 0xD800 && hexValue <= 0xDBFF
        let isLow = hexValue >= 0xDC00 && hexValue <= 0xDFFF
        let inPair = hexCountPaired
        if inPair {
            hexCountPaired = false
            if !isLow { return loneHigh(detectedAt: i) }
            mode = .string
            return nil
        }
        if isLow {
            return fail(
                .invalidUTF8, "\\u\(hex4(hexValue)) is a low surrogate without a high surrogate before it",
                at: escapeStart, detectedAt: i)
        }
        if isHigh {
            pendingHigh = escapeStart
            pendingHighValue = hexValue
            hexCountPaired = true
            mode = .afterHigh
            return nil
        }
        mode = .string
        return nil
    }

    var hexCountPaired = false
    var pendingHighValue: UInt32 = 0

    mutating func loneHigh(detectedAt i: Int) -> Failure {
        fail(
            .invalidUTF8, "\\u\(hex4(pendingHighValue)) is a high surrogate without a low surrogate after it",
            at: pendingHigh, detectedAt: i)
    }

    /// The value of one hex digit, or nil.
    @inline(__always)
    static func hexDigit(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c &- 48)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(c &- 87)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(c &- 55)
        default: nil
        }
    }

    func hex4(_ v: UInt32) -> String { hex(UInt8(v >> 8)) + hex(UInt8(v & 0xFF)) }
}
