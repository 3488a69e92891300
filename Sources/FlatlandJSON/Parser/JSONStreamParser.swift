import CFlatlandSIMD
import CYAJL

/// A streaming, push-style JSON parser over libyajl.
///
/// Feed it bytes in chunks of any size with ``feed(_:)-(UnsafeRawBufferPointer)``, then call
/// ``finish()``. Events go to the ``JSONEventHandler`` as soon as their tokens are complete, so a
/// large document never has to be held in memory. The parser is strict RFC 8259 by default
/// (see ``JSONParserOptions``) and enforces ``JSONLimits`` as the bytes arrive.
///
/// ```swift
/// let builder = JSONValueBuilder()
/// let parser = JSONStreamParser(handler: builder)
/// try parser.feed(Array(#"{"id": 12345678901234567890"#.utf8))
/// try parser.feed(Array("}".utf8))
/// try parser.finish()
/// ```
///
/// A parser parses one input. After an error every call throws that same error. It is not
/// thread-safe: feed it from one task or thread at a time.
public final class JSONStreamParser {
    /// The handler that receives the events.
    public let handler: any JSONEventHandler
    /// The options this parser was created with.
    public let options: JSONParserOptions

    private var yajl: yajl_handle!
    private var scanner: StrictScanner
    /// Bytes accepted before the current chunk.
    private var chunkStart = 0
    private var chunkBase: UnsafePointer<UInt8>?
    private var chunkCount = 0
    private var finishing = false
    private var finished = false
    private var failure: JSONError?
    private var handlerError: (any Error)?
    private var eventCount = 0
    /// The absolute offset just after the last token that libyajl reported to a callback.
    private var lastEventEnd = 0
    /// The last bytes before the current chunk, for excerpts and locations.
    private var history: [UInt8] = []
    private var repairBuffer: [UInt8] = []
    /// The token (a string, number or literal) that was still going on where the previous chunk
    /// ended: where it starts, and whether it is a number or literal.
    private var pendingStart: Int?
    private var pendingIsRun = false
    private var pendingLocation = JSONLocation(offset: 0, line: 1, column: 1)
    private var pendingExcerpt: [UInt8] = []
    /// The levels open after libyajl's last event, kept by the callbacks for the fast path.
    /// Behind a pointer, since they change it at every bracket, and a stored property changed
    /// by a call that may reach the parser again is checked for exclusive access at run time.
    private let eventContainers: UnsafeMutablePointer<ContainerStack>
    /// The scanner's limits, as constants the callbacks read without an access check.
    private let maxDepth: Int
    private let maxNumberLength: Int
    /// Set when a callback stopped libyajl because a strict check may have failed: the states
    /// then say which, and where.
    private var stoppedForStrictCheck = false
    /// A string or key whose decoded length is above this may be longer than its limit in the
    /// input (an escape is at most six bytes for one of output), so its raw length is measured.
    private let stringLengthToMeasure: Int
    private let keyLengthToMeasure: Int

    /// Whether chunks may skip the strict scanner's states when a summary of their bytes allows
    /// it (see ``feedFast(_:count:)``). Tests turn it off to compare both ways.
    @_spi(Testing) public var allowsFastPath = true
    /// The fewest bytes a chunk, and what follows the token it began inside, must have for the
    /// fast path: below, its fixed costs outweigh what it saves. Tests lower it to 1, so that
    /// short inputs and small chunks go through it too.
    @_spi(Testing) public var fastPathMinimumBytes = 128
    /// How many chunks took the fast path, for tests to see that they exercised it.
    @_spi(Testing) public private(set) var fastChunkCount = 0
    /// Whether a chunk wholly inside a string is held until the string ends (see
    /// ``feed(_:)-(UnsafeRawBufferPointer)``). Tests turn it off to compare both ways.
    @_spi(Testing) public var holdsStrings = true
    /// The bytes libyajl has read: those handed to it, plus, at each call, the start of the token
    /// it had buffered from earlier calls, which it reads again from its first byte. For tests to
    /// see that the work is linear in the input.
    @_spi(Testing) public private(set) var bytesReadByYAJL = 0
    /// The bytes held back, inside a string that has not ended yet.
    @_spi(Testing) public var heldByteCount: Int { held.count }

    /// The bytes of a string going on, fed after the chunk it began in, that libyajl has not seen.
    private var held: [UInt8] = []
    /// The scanner's state after the held bytes (nil when none are held).
    private var heldScanner: StrictScanner?

    /// Creates a parser that sends its events to `handler`.
    public init(handler: any JSONEventHandler, options: JSONParserOptions = .strict) {
        self.handler = handler
        self.options = options
        self.scanner = StrictScanner(options: options)
        self.maxDepth = scanner.maxDepth
        self.maxNumberLength = scanner.maxNumberLength
        self.stringLengthToMeasure = scanner.maxStringLength / 6
        self.keyLengthToMeasure = scanner.maxKeyLength / 6
        self.eventContainers = UnsafeMutablePointer<ContainerStack>.allocate(capacity: 1)
        eventContainers.initialize(to: ContainerStack())
        // The parser is alive through every `yajl_parse` that calls back into it.
        self.yajl = yajl_alloc(yajlCallbacks.pointer, nil, Unretained(self).address)
        yajl_config_set(yajl, yajl_dont_validate_strings, true)
        yajl_config_set(yajl, yajl_allow_comments, options.allowComments)
        yajl_config_set(yajl, yajl_allow_multiple_values, options.allowMultipleValues)
    }

    deinit {
        yajl_free(yajl)
        eventContainers.deinitialize(count: 1)
        eventContainers.deallocate()
    }

    /// The number of bytes accepted so far.
    public var bytesConsumed: Int { chunkStart + held.count }

    /// Parses the next chunk of input.
    ///
    /// A chunk that lies wholly inside a string begun in an earlier chunk is checked and kept
    /// until the string ends, then handed to libyajl with the rest of the string in one piece:
    /// libyajl reads a token that spans several calls again from its start at every call, which
    /// made a long string fed in small chunks quadratic. So memory grows with the longest string
    /// (bounded by ``JSONLimits/maxStringLength``), never with the document, and no event is
    /// delayed, since such a chunk holds none.
    ///
    /// - Throws: ``JSONError`` for invalid input, an exceeded limit, or an error the handler threw.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(JSONError) {
        if let failure { throw failure }
        if finished { throw JSONError(.misuse, "feed after finish") }
        guard bytes.count > 0, let raw = bytes.baseAddress else { return }
        let base = raw.assumingMemoryBound(to: UInt8.self)
        if holdsStrings, hold(base, count: bytes.count) { return }
        guard !held.isEmpty else { return try feedChunk(base, count: bytes.count) }
        try feedHeld(appending: UnsafeBufferPointer(start: base, count: bytes.count))
    }

    /// Hands the held bytes, then `more`, to the parser as one chunk.
    private func feedHeld(appending more: UnsafeBufferPointer<UInt8> = UnsafeBufferPointer(start: nil, count: 0))
        throws(JSONError)
    {
        var joined: [UInt8] = []
        swap(&joined, &held)
        heldScanner = nil
        joined.append(contentsOf: more)
        let done: Result<Void, JSONError> = joined.withUnsafeBufferPointer { all in
            do throws(JSONError) {
                try feedChunk(all.baseAddress!, count: all.count)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try done.get()
    }

    /// Keeps the chunk instead of parsing it when it lies wholly inside the string that was going
    /// on before it, and neither the states nor libyajl would find anything wrong in it (else the
    /// chunk is parsed at once, which reports the error where and when it would have been found
    /// anyway).
    private func hold(_ base: UnsafePointer<UInt8>, count n: Int) -> Bool {
        guard heldScanner != nil || scanner.inString else { return false }
        let start = chunkStart + held.count
        guard n <= options.limits.maxTotalBytes - start else { return false }
        let entry = heldScanner ?? scanner
        var probe = entry
        probe.beginChunk()
        // The states stop at the first 64-byte step after the string ends: a chunk that only
        // begins inside a string costs little here.
        guard probe.scanHead(base, count: n, start: start) == n, probe.inString,
            probe.stringStart == entry.stringStart, entry.libyajlAcceptsStringContent(base, count: n)
        else { return false }
        held.append(contentsOf: UnsafeBufferPointer(start: base, count: n))
        heldScanner = probe
        return true
    }

    /// Parses a chunk: the bytes fed, or the held bytes with those that followed them.
    private func feedChunk(_ base: UnsafePointer<UInt8>, count: Int) throws(JSONError) {
        var n = count
        let limit = options.limits.maxTotalBytes
        let overLimit = n > limit - chunkStart
        if overLimit { n = max(0, limit - chunkStart) }
        chunkBase = base
        chunkCount = n
        defer { chunkBase = nil }

        let fastPathApplies = allowsFastPath && scanner.usesBlocks && n >= fastPathMinimumBytes
        let fed = fastPathApplies ? try feedFast(base, count: n) : false
        if !fed {
            let scanFailure = scanner.scan(base, count: n, start: chunkStart)
            let safe = scanFailure?.detectedAt ?? n
            if safe > 0 {
                countRead(safe)
                let status = yajl_parse(yajl, base, safe)
                // A callback that stopped libyajl for the states: their failure is the one.
                if status != yajl_status_ok, !(stoppedForStrictCheck && scanFailure != nil) {
                    throw fail(yajlFailure(status))
                }
            }
            if let scanFailure { throw fail(locate(scanFailure.error)) }
        }
        if overLimit {
            throw fail(
                locate(JSONError(.limit, "input longer than \(limit) bytes"), at: chunkStart + n))
        }
        // Brackets are events as soon as libyajl reads them, so both ways of keeping the open
        // levels agree after every chunk (the fast path relies on it).
        assert(scanner.containers == eventContainers.pointee, "the open levels differ from libyajl's")
        updatePending(base, count: n)
        remember(base, count: n)
        chunkStart += n
    }

    /// Ends the input: reports a value still open, or an empty input, as an error.
    public func finish() throws(JSONError) {
        if let failure { throw failure }
        if finished { throw JSONError(.misuse, "finish called twice") }
        if !held.isEmpty { try feedHeld() }
        finishing = true
        // libyajl accepts an unterminated string or comment after a complete value.
        if scanner.inString {
            throw fail(locate(JSONError(.truncated, "unexpected end of input inside a string"), at: chunkStart))
        }
        switch scanner.mode {
        case .slash, .blockComment, .blockCommentStar:
            throw fail(locate(JSONError(.truncated, "unexpected end of input inside a comment"), at: chunkStart))
        default:
            break
        }
        let status = yajl_complete_parse(yajl)
        if status != yajl_status_ok {
            // Nothing but whitespace and comments: several values may be none at all.
            if options.allowMultipleValues, eventCount == 0, pendingStart == nil, status == yajl_status_error {
                finished = true
                return
            }
            throw fail(yajlFailure(status))
        }
        if eventCount == 0, !options.allowMultipleValues {
            throw fail(locate(JSONError(.truncated, "empty input: expected a JSON value"), at: chunkStart))
        }
        finished = true
    }

    /// Counts the `n` bytes about to be handed to libyajl, and the buffered start of the token
    /// going on, which libyajl reads again.
    @inline(__always)
    private func countRead(_ n: Int) {
        bytesReadByYAJL &+= n &+ (pendingStart.map { chunkStart - $0 } ?? 0)
    }

    private func fail(_ error: JSONError) -> JSONError {
        failure = error
        return error
    }

    // MARK: The fast path

    /// Lets libyajl read the chunk without the strict scanner's states, when nothing in it
    /// needs them. Returns false, having fed nothing and changed nothing, when the chunk must go
    /// through the states.
    ///
    /// What the states check that libyajl does not is either visible in a summary of the bytes
    /// taken before libyajl reads them (form feed and vertical tab, surrogate escapes, invalid
    /// UTF-8: then the chunk goes through the states), or checked at the event it concerns (the
    /// depth at each `{` and `[`, the length of each string, key and number: a callback stops
    /// libyajl before the handler sees the event). Only the token that began before the chunk
    /// and the bytes after its last event go through the states, which so end the chunk exactly
    /// where a scan of all of it would. When libyajl stops with an error, the states scan the
    /// chunk from its start, and the first error of the two is reported, as on the other path.
    private func feedFast(_ base: UnsafePointer<UInt8>, count n: Int) throws(JSONError) -> Bool {
        let start = chunkStart
        if start == 0, base[0] == 0xEF { return false }
        let atChunkStart = scanner
        scanner.beginChunk()
        guard let h = scanner.scanHead(base, count: n, start: start), n - h >= fastPathMinimumBytes else {
            scanner = atChunkStart
            return false
        }
        var summary = flatland_summary()
        flatland_summarize(base + h, UInt64(n - h), scanner.validateUTF8 ? 1 : 0, &summary)
        if summary.suspicious != 0 || summary.invalid_utf8 != 0 {
            scanner = atChunkStart
            return false
        }
        let afterHead = scanner.lines
        let eventsBefore = eventCount
        countRead(n)
        let status = yajl_parse(yajl, base, n)
        if status != yajl_status_ok {
            throw fail(failureAfterFastParse(status, base, count: n, atChunkStart: atChunkStart))
        }

        // Where the last event ended, then the rest through the states.
        var tail = h
        if eventCount != eventsBefore, lastEventEnd - start > h {
            tail = lastEventEnd - start
            // An event that ends with `{` is the start of an object.
            scanner.resume(containers: eventContainers.pointee, afterObjectStart: base[tail - 1] == UInt8(ascii: "{"))
        }
        // The line state at the end, from the summary (a line feed in a string is an error, so
        // every one counts), and at `tail`, taking the tail's bytes back off.
        var end = afterHead
        if summary.line_feeds > 0 {
            end.line += Int(summary.line_feeds)
            end.lineStart = start + h + Int(summary.last_line_feed) + 1
            end.extra = Int(summary.continuations_after)
        } else {
            end.extra += Int(summary.continuations)
        }
        scanner.lines = linesAt(tail, end: end, afterHead: afterHead, head: h, base: base, count: n)
        if scanner.scanRange(base, from: tail, to: n, start: start) != nil {
            // A limit passed in the token still going on: the states, from the chunk's start,
            // say where (libyajl found nothing wrong, so theirs is the first error).
            scanner = atChunkStart
            if let f = scanner.scan(base, count: n, start: start) { throw fail(locate(f.error)) }
            assertionFailure("the states found no error from the chunk's start")
        }
        assert(scanner.lines == end, "the line state after the chunk differs from its summary's")
        fastChunkCount &+= 1
        return true
    }

    /// The line state at chunk index `t`, from the states at `head` and at the chunk's end
    /// (`count` bytes).
    private func linesAt(
        _ t: Int, end: StrictScanner.LineState, afterHead: StrictScanner.LineState, head: Int,
        base: UnsafePointer<UInt8>, count n: Int
    ) -> StrictScanner.LineState {
        var feeds = 0
        var continuations = 0
        for i in t..<n {
            let b = base[i]
            if b == 0x0A { feeds += 1 } else if b & 0xC0 == 0x80 { continuations += 1 }
        }
        if feeds == 0 {
            var state = end
            state.extra -= continuations
            return state
        }
        var extra = 0
        var j = t - 1
        while j >= head, base[j] != 0x0A {
            if base[j] & 0xC0 == 0x80 { extra += 1 }
            j -= 1
        }
        if j < head {
            var state = afterHead
            state.extra += extra
            return state
        }
        return StrictScanner.LineState(line: end.line - feeds, lineStart: chunkStart + j + 1, extra: extra)
    }

    /// The error to report when libyajl stopped in a chunk it read whole: the states scan the
    /// chunk from its start, and the path through them would have let libyajl read only the
    /// bytes before their first error, so libyajl's error (or the handler's) counts only when it
    /// came within those.
    private func failureAfterFastParse(
        _ status: yajl_status, _ base: UnsafePointer<UInt8>, count n: Int, atChunkStart: StrictScanner
    ) -> JSONError {
        let consumed = Int(yajl_get_bytes_consumed(yajl))
        scanner = atChunkStart
        let scanFailure = scanner.scan(base, count: n, start: chunkStart)
        // libyajl reports a number (the only token that ends with a digit) only once it has read
        // the byte after it.
        let endsNumber = consumed > 0 && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(base[consumed - 1])
        let needed = handlerError != nil && endsNumber ? consumed + 1 : consumed
        if let scanFailure, stoppedForStrictCheck || needed > scanFailure.detectedAt {
            return locate(scanFailure.error)
        }
        assert(!stoppedForStrictCheck, "a callback stopped libyajl, but the states found no error")
        return yajlFailure(status)
    }

    /// Stops libyajl at the current event, for the states to say what is wrong.
    @inline(never)
    private func stopForStrictCheck() -> Int32 {
        stoppedForStrictCheck = true
        return 0
    }

    /// Whether the string or key that just ended is longer than its limit in the input, from its
    /// closing quote back to its opening one (the first quote that no backslash escapes). A
    /// string that began before the chunk went through the states, which measured it.
    @inline(never)
    private func rawLengthExceedsLimit(isKey: Bool) -> Bool {
        guard !finishing, let base = chunkBase else { return false }
        let close = lastEventEnd - 1 - chunkStart
        var q = close - 1
        while q >= 0 {
            if base[q] == UInt8(ascii: "\"") {
                var backslashes = 0
                while q - 1 - backslashes >= 0, base[q - 1 - backslashes] == UInt8(ascii: "\\") { backslashes += 1 }
                if backslashes & 1 == 0 { break }
            }
            q -= 1
        }
        guard q >= 0 else { return false }
        return close - (q + 1) > (isKey ? scanner.maxKeyLength : scanner.maxStringLength)
    }

    // MARK: Errors and their locations

    /// The location of an absolute offset at or after the start of the current chunk.
    private func location(at offset: Int) -> JSONLocation {
        if finishing || chunkBase == nil { return scanner.lines.location(at: offset) }
        if offset < chunkStart {
            // The last bytes of a token that ended the previous chunk: same line, walk back.
            let start = scanner.chunkLines.location(at: chunkStart)
            var column = start.column
            let historyStart = chunkStart - history.count
            for o in stride(from: chunkStart - 1, through: max(offset, historyStart), by: -1) {
                let b = history[o - historyStart]
                if b == 0x0A { return start }
                if b & 0xC0 != 0x80 { column -= 1 }
            }
            return JSONLocation(offset: offset, line: start.line, column: column)
        }
        var state = scanner.chunkLines
        let count = min(max(0, offset - chunkStart), chunkCount)
        state.advance(over: UnsafeBufferPointer(start: chunkBase, count: count), start: chunkStart)
        return state.location(at: offset)
    }

    private func locate(_ error: JSONError, at offset: Int? = nil) -> JSONError {
        var e = error
        if let offset, offset == pendingStart {
            // The start of a token that began in an earlier chunk, maybe long before.
            e.location = pendingLocation
            e.excerpt = Self.excerptText(pendingExcerpt)
            return e
        }
        if let offset { e.location = location(at: offset) }
        if let offset = e.location?.offset { e.excerpt = Self.excerptText(excerptBytes(at: offset)) }
        return e
    }

    /// Up to 24 bytes before `offset` and the byte at it, from what has been fed so far.
    private func excerptBytes(at offset: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        let from = max(0, offset - 24)
        let available = chunkStart + (chunkBase == nil ? 0 : chunkCount)
        let to = min(offset + 1, available)
        guard from < to else { return [] }
        for o in from..<to {
            if let b = byte(at: o) { bytes.append(b) }
        }
        return bytes
    }

    private static func excerptText(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        return String(text.unicodeScalars.map { $0.value < 0x20 ? " " : Character($0) })
    }

    /// The byte at an absolute offset, if it is in the current chunk or the history.
    private func byte(at offset: Int) -> UInt8? {
        if offset >= chunkStart {
            guard let chunkBase, offset - chunkStart < chunkCount else { return nil }
            return chunkBase[offset - chunkStart]
        }
        let historyStart = chunkStart - history.count
        return offset >= historyStart ? history[offset - historyStart] : nil
    }

    /// Records the token still going on at the end of the chunk, so that an error found when it
    /// ends, chunks later, can point at its first byte.
    private func updatePending(_ base: UnsafePointer<UInt8>, count n: Int) {
        let chunkEnd = chunkStart + n
        var start: Int?
        var isRun = false
        if scanner.inString {
            start = scanner.stringStart - 1
        } else if scanner.mode == .value {
            var t = 0
            while t < n, StrictScanner.isTokenByte(base[n - 1 - t]) { t += 1 }
            if t > 0 {
                var s = chunkEnd - t
                if t == n, pendingIsRun, let p = pendingStart { s = p }
                // Numbers and literals can abut: the pending one starts after the last reported.
                s = max(s, lastEventEnd)
                if s < chunkEnd {
                    start = s
                    isRun = true
                }
            }
        }
        defer {
            pendingStart = start
            pendingIsRun = isRun
        }
        guard let start, start != pendingStart else { return }
        if isRun {
            // A run holds no line feed and no multi-byte character: the line state at the end
            // of the chunk locates it.
            pendingLocation = start >= chunkStart ? scanner.lines.location(at: start) : location(at: start)
        } else {
            pendingLocation = scanner.openQuoteLocation(base, count: n, chunkStart: chunkStart)
        }
        pendingExcerpt = excerptBytes(at: start)
    }

    private func remember(_ base: UnsafePointer<UInt8>, count n: Int) {
        let keep = 64
        if n >= keep {
            history = Array(UnsafeBufferPointer(start: base + (n - keep), count: keep))
        } else {
            history.append(contentsOf: UnsafeBufferPointer(start: base, count: n))
            if history.count > keep { history.removeFirst(history.count - keep) }
        }
    }

    private func yajlFailure(_ status: yajl_status) -> JSONError {
        if status == yajl_status_client_canceled, let error = handlerError {
            handlerError = nil
            return locate(handlerFailure(error), at: lastEventEnd)
        }
        let consumed = finishing ? 0 : Int(yajl_get_bytes_consumed(yajl))
        var text = "invalid JSON"
        if let c = yajl_get_error(yajl, 0, nil, 0) {
            text = String(cString: c)
            yajl_free_error(yajl, c)
        }
        text = text.trimmingSpaces
        let lexical = text.hasPrefix("lexical error: ")
        for prefix in ["lexical error: ", "parse error: "] where text.hasPrefix(prefix) {
            text.removeFirst(prefix.count)
        }
        if text.hasSuffix(".") { text.removeLast() }
        if finishing, text == "premature EOF" {
            if eventCount == 0, pendingStart == nil {
                return locate(JSONError(.truncated, "empty input: expected a JSON value"), at: chunkStart)
            }
            return locate(JSONError(.truncated, "unexpected end of input"), at: chunkStart)
        }
        if lexical {
            // Lexical errors stop at the offending byte, except "invalid char", which stops
            // after it. At the end of the input the offending byte is the end.
            var offset = chunkStart + consumed
            if !finishing, text == "invalid char in json text" {
                offset -= 1
                if let b = byte(at: offset) { text = "unexpected character \(describeByte(b))" }
            }
            return locate(JSONError(.syntax, text), at: offset)
        }
        // A parse error: point at the first byte of the token libyajl rejected. libyajl's own
        // offset is after that token, or (for the two "after ... I expect" errors) somewhere in
        // it and clipped to the chunk, so it is only a hint.
        let offset: Int
        switch text {
        case "after key and value, inside map, I expect ',' or '}'", "after array element, I expect ',' or ']'",
            "trailing garbage", "object key and value must be separated by a colon (':')":
            // The rejected token is the first one after the last token that reached a callback.
            offset = firstSignificant(after: lastEventEnd)
        default:
            // "unallowed token", "invalid object key": a punctuation mark, number or literal.
            offset = tokenStart(endingAt: chunkStart + consumed)
        }
        if text == "unallowed token at this point in JSON text" { text = "unexpected token" }
        return locate(JSONError(.syntax, text), at: offset)
    }

    /// The first byte at or after `offset` that is not whitespace or part of a comment.
    private func firstSignificant(after offset: Int) -> Int {
        if !finishing, let chunkBase, offset >= chunkStart {
            return skipInsignificant(chunkBase, from: offset - chunkStart, mode: .value)
        }
        if let pendingStart { return max(pendingStart, offset) }
        if !finishing, let chunkBase {
            return skipInsignificant(chunkBase, from: 0, mode: scanner.chunkMode)
        }
        return chunkStart
    }

    private func skipInsignificant(_ base: UnsafePointer<UInt8>, from index: Int, mode: StrictScanner.Mode) -> Int {
        var m = mode
        var i = index
        while i < chunkCount {
            let b = base[i]
            switch m {
            case .value:
                if b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 {
                    break
                } else if b == UInt8(ascii: "/"), options.allowComments {
                    m = .slash
                } else {
                    return chunkStart + i
                }
            case .slash:
                if b == UInt8(ascii: "/") {
                    m = .lineComment
                } else if b == UInt8(ascii: "*") {
                    m = .blockComment
                } else {
                    return chunkStart + i - 1
                }
            case .lineComment:
                if b == 0x0A { m = .value }
            case .blockComment, .blockCommentStar:
                if m == .blockCommentStar, b == UInt8(ascii: "/") {
                    m = .value
                } else {
                    m = b == UInt8(ascii: "*") ? .blockCommentStar : .blockComment
                }
            default:
                return chunkStart + i
            }
            i += 1
        }
        return chunkStart + chunkCount
    }

    /// The first byte of the number, literal or punctuation mark that ends just before `end`.
    private func tokenStart(endingAt end: Int) -> Int {
        guard let last = byte(at: end - 1), StrictScanner.isTokenByte(last) else { return max(0, end - 1) }
        var s = end
        while s > chunkStart, let b = byte(at: s - 1), StrictScanner.isTokenByte(b) { s -= 1 }
        if s == chunkStart, pendingIsRun, let pendingStart { s = pendingStart }
        return max(s, lastEventEnd)
    }

    private func describeByte(_ b: UInt8) -> String {
        if b >= 0x20, b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x" + String(b, radix: 16, uppercase: true)
    }

    private func handlerFailure(_ error: any Error) -> JSONError {
        if let e = error as? JSONError { return e }
        if error is CancellationError { return JSONError(.cancelled, "parse cancelled by the handler") }
        return JSONError(.handler, String(describing: error), underlying: error)
    }

    // MARK: Events from libyajl

    /// Notes where the token that libyajl reports ends (an absolute offset that does not depend
    /// on the chunking: libyajl only reports a token once it has read all of it).
    @inline(__always)
    private func noteEvent() {
        eventCount &+= 1
        lastEventEnd = finishing ? chunkStart : chunkStart &+ Int(yajl_get_bytes_consumed(yajl))
    }

    @inline(never)
    fileprivate func failEvent(_ error: any Error) -> Int32 {
        handlerError = error
        return 0
    }

    // The callbacks are inlined into libyajl's C entry points, and keep only the common case
    // there (no repair, no error), so that each event costs one call into the handler.

    @inline(__always)
    fileprivate func onString(_ pointer: UnsafePointer<UInt8>?, _ count: Int, isKey: Bool) -> Int32 {
        noteEvent()
        if count > (isKey ? keyLengthToMeasure : stringLengthToMeasure), rawLengthExceedsLimit(isKey: isKey) {
            return stopForStrictCheck()
        }
        let buffer = UnsafeRawBufferPointer(start: pointer, count: count)
        if options.replaceInvalidUTF8 { return onStringToRepair(buffer, isKey: isKey) }
        return deliverString(JSONBytes(unsafeBuffer: buffer), isKey: isKey)
    }

    @inline(never)
    private func onStringToRepair(_ buffer: UnsafeRawBufferPointer, isKey: Bool) -> Int32 {
        guard !UTF8Validation.isValid(buffer) else {
            return deliverString(JSONBytes(unsafeBuffer: buffer), isKey: isKey)
        }
        repairBuffer = Array(String(decoding: buffer, as: UTF8.self).utf8)
        return repairBuffer.withUnsafeBytes { repaired in
            deliverString(JSONBytes(unsafeBuffer: repaired), isKey: isKey)
        }
    }

    @inline(__always)
    private func deliverString(_ bytes: JSONBytes, isKey: Bool) -> Int32 {
        do {
            if isKey { try handler.key(bytes) } else { try handler.string(bytes) }
            return 1
        } catch {
            return failEvent(error)
        }
    }

    @inline(__always)
    fileprivate func onNumber(_ pointer: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        noteEvent()
        if count > maxNumberLength, !finishing { return stopForStrictCheck() }
        do {
            try handler.number(JSONNumberText(unsafeBuffer: UnsafeRawBufferPointer(start: pointer, count: count)))
            return 1
        } catch {
            return failEvent(error)
        }
    }

    @inline(__always)
    fileprivate func onEvent(_ kind: UInt8) -> Int32 {
        noteEvent()
        if kind < 4 {
            if kind & 1 == 0 {
                if eventContainers.pointee.depth >= maxDepth { return stopForStrictCheck() }
                eventContainers.pointee.push(isObject: kind == 0)
            } else {
                eventContainers.pointee.pop()
            }
        }
        do {
            switch kind {
            case 0: try handler.beginObject()
            case 1: try handler.endObject()
            case 2: try handler.beginArray()
            case 3: try handler.endArray()
            case 4: try handler.null()
            case 5: try handler.bool(false)
            default: try handler.bool(true)
            }
            return 1
        } catch {
            return failEvent(error)
        }
    }
}

extension JSONStreamParser {
    /// Parses the next chunk of input from any byte sequence (`[UInt8]`, `Data`, a slice).
    public func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) throws(JSONError) {
        let done: Result<Void, JSONError>? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(JSONError) {
                try feed(UnsafeRawBufferPointer(buffer))
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if let done { return try done.get() }
        let copy = Array(bytes)
        let result: Result<Void, JSONError> = copy.withUnsafeBytes { buffer in
            do throws(JSONError) {
                try feed(buffer)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Parses `bytes` as one document in chunks of `chunkSize` bytes (all at once when nil),
    /// sending the events to `handler`.
    public static func parse<Bytes: Sequence<UInt8>>(
        _ bytes: Bytes, handler: any JSONEventHandler, options: JSONParserOptions = .strict,
        chunkSize: Int? = nil
    ) throws(JSONError) {
        let parser = JSONStreamParser(handler: handler, options: options)
        let all = Array(bytes)
        let step = max(1, chunkSize ?? all.count)
        var start = 0
        while start < all.count {
            let end = min(all.count, start + step)
            try parser.feed(all[start..<end])
            start = end
        }
        try parser.finish()
    }
}

private func yajl_config_set(_ handle: yajl_handle, _ option: yajl_option, _ on: Bool) {
    _ = flatland_yajl_config(handle, option, on ? 1 : 0)
}

/// Calls `body` with the parser behind libyajl's context pointer, without retaining it: the
/// parser is alive for the whole `yajl_parse` call that invokes the callbacks.
@inline(__always)
private func withParser(_ context: UnsafeMutableRawPointer?, _ body: (JSONStreamParser) -> Int32) -> Int32 {
    Unretained<JSONStreamParser>(address: context!).with(body)
}

/// libyajl keeps a pointer to its callbacks: one table for the life of the process.
private let yajlCallbacks = ImmortalTable(
    count: 1,
    initial: yajl_callbacks(
        yajl_null: { context in withParser(context) { $0.onEvent(4) } },
        yajl_boolean: { context, value in withParser(context) { $0.onEvent(value == 0 ? 5 : 6) } },
        yajl_integer: nil,
        yajl_double: nil,
        yajl_number: { context, a, b in withParser(context) { $0.onNumber(a, b) } },
        yajl_string: { context, a, b in withParser(context) { $0.onString(a, b, isKey: false) } },
        yajl_start_map: { context in withParser(context) { $0.onEvent(0) } },
        yajl_map_key: { context, a, b in withParser(context) { $0.onString(a, b, isKey: true) } },
        yajl_end_map: { context in withParser(context) { $0.onEvent(1) } },
        yajl_start_array: { context in withParser(context) { $0.onEvent(2) } },
        yajl_end_array: { context in withParser(context) { $0.onEvent(3) } }
    ))

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}
