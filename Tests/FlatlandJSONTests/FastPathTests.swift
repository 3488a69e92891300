import CFlatlandSIMD
@_spi(Testing) import FlatlandJSON
import Testing

/// A chunk of 128 bytes or more that a summary of its bytes clears goes to libyajl without the
/// strict scanner's states (the fast path); every other chunk goes through them. Both must give
/// the same events and the same error (code, message, location, excerpt) for any input and any
/// chunking, so each document here is parsed both ways and compared.
@Suite struct FastPathTests {
    static func parse(
        _ bytes: [UInt8], chunkSize: Int?, options: JSONParserOptions, fastPath: Bool, throwAtEvent: Int? = nil,
        minimum: Int = 128
    ) -> (outcome: Outcome, fastChunks: Int) {
        var seen = 0
        let recorder = Recorder { _, _ in
            seen += 1
            if seen == throwAtEvent { throw CancellationError() }
        }
        var parser: JSONStreamParser?
        let outcome = FlatlandJSONTests.parse(bytes, chunkSize: chunkSize, options: options, recorder: recorder) {
            $0.allowsFastPath = fastPath
            $0.fastPathMinimumBytes = minimum
            parser = $0
        }
        return (outcome, parser?.fastChunkCount ?? 0)
    }

    /// Longer documents than the block tests', so that chunks of 128 bytes and more hold many
    /// events, tokens that cross their edges and (spliced in) every hazard.
    static func documents(count: Int, seed: UInt64) -> [[UInt8]] {
        var rng = SeededGenerator(seed: seed)
        var documents: [[UInt8]] = []
        while documents.count < count {
            let values = (0..<Int.random(in: 8...40, using: &rng)).map { _ in
                BlockScanTests.value(&rng, depth: 0)
            }
            var bytes = Array(("[" + values.joined(separator: ",\n") + "]").utf8)
            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                let at = Int.random(in: 0...bytes.count, using: &rng)
                let hazard =
                    Bool.random(using: &rng)
                    ? BlockScanTests.hazards.randomElement(using: &rng)!
                    : Self.escapeHazards.randomElement(using: &rng)!
                bytes.insert(contentsOf: hazard, at: at)
            }
            documents.append(bytes)
        }
        return documents
    }

    /// Surrogate escapes that the summary lets through when they pair, next to ones it must not:
    /// a low half after an escaped backslash, a high half before something else, two lows.
    static let escapeHazards: [[UInt8]] = [
        #"\ud83d\ude00"#, #"\\ud83d\ude00"#, #"\ud83d\u0041"#, #"\ud83d\ude00\ude00"#, #"\uDBFF\uDFFF"#, #"\ud7ff"#,
        #"\ud83d\\ude00"#, #"\ud83d\ud83d\ude00"#,
    ].map { Array($0.utf8) }

    @Test(arguments: 0..<3)
    func fastPathAndStatesAgree(_ variant: Int) {
        let options = BlockScanTests.variants[variant]
        var valid = 0
        var invalid = 0
        var fastChunks = 0
        for (n, bytes) in Self.documents(count: 250, seed: 0xFA57 + UInt64(variant)).enumerated() {
            let reference = Self.parse(bytes, chunkSize: nil, options: options, fastPath: false).outcome
            if reference.error == nil { valid += 1 } else { invalid += 1 }
            // Chunks the fast path takes as they are, and small ones it takes when allowed to.
            let sizes: [(Int?, Int)] = [
                (nil, 128), (128, 128), (150, 128), (301, 128), (1024, 128), (1, 1), (7, 1), (37, 1),
            ]
            for (size, minimum) in sizes {
                let fast = Self.parse(bytes, chunkSize: size, options: options, fastPath: true, minimum: minimum)
                fastChunks += fast.fastChunks
                #expect(
                    fast.outcome == reference,
                    "chunk size \(size ?? 0) of \(String(decoding: bytes, as: UTF8.self).debugDescription): \(fast.outcome) vs the states: \(reference)"
                )
            }
            // A handler that throws part way: the same events reach it, and the same error.
            let at = 1 + n % max(1, reference.events.count)
            let stopped = Self.parse(bytes, chunkSize: 150, options: options, fastPath: false, throwAtEvent: at)
            let stoppedFast = Self.parse(bytes, chunkSize: 150, options: options, fastPath: true, throwAtEvent: at)
            #expect(stoppedFast.outcome == stopped.outcome)
            let stoppedSmall = Self.parse(bytes, chunkSize: 5, options: options, fastPath: false, throwAtEvent: at)
            let stoppedSmallFast = Self.parse(
                bytes, chunkSize: 5, options: options, fastPath: true, throwAtEvent: at, minimum: 1)
            #expect(stoppedSmallFast.outcome == stoppedSmall.outcome)
        }
        // Valid documents are rarer under the tight limits.
        #expect(valid > 3)
        #expect(invalid > 30)
        // The fast path was taken, often.
        #expect(fastChunks > 300)
    }

    /// The summary of `bytes` by the path this processor uses, or by the baseline.
    static func summarize(_ bytes: [UInt8], checkingUTF8: Bool, baseline: Bool) -> flatland_summary {
        var s = flatland_summary()
        bytes.withUnsafeBufferPointer {
            let base = $0.baseAddress ?? UnsafePointer(bitPattern: 1)!
            let summarize = baseline ? flatland_summarize_baseline : flatland_summarize
            summarize(base, UInt64(bytes.count), checkingUTF8 ? 1 : 0, &s)
        }
        return s
    }

    /// The summary, field by field against the plain definition, for the path this processor
    /// uses and for the baseline; at every length up to a few blocks, so that the bytes after
    /// the last whole block are covered too.
    @Test(arguments: [false, true])
    func summaryMatchesItsDefinition(baseline: Bool) {
        var rng = SeededGenerator(seed: 0x5EED)
        let interesting: [UInt8] = [0x0A, 0x0B, 0x0C, 0x5C, 0x75, 0x64, 0x44, 0x80, 0xBF, 0xC3, 0xFF, 0x22, 0x20]
        // Surrogate escapes, whole and in pieces, paired and not.
        let escapes: [[UInt8]] = [
            #"\ud83d\ude00"#, #"\uD800\uDC00"#, #"\ud83d"#, #"\ude00"#, #"\ud7ff"#, #"\ud83d\u0041"#, #"\\ud83d"#,
            #"\ud83d\ud83d"#, #"\ud83d\uDf"#, #"\udX"#,
        ].map { Array($0.utf8) }
        var ordinaryBlocks = 0
        for round in 0..<3000 {
            let count = round % 300
            var bytes: [UInt8] = []
            while bytes.count < count {
                switch Int.random(in: 0..<14, using: &rng) {
                case 0: bytes += escapes.randomElement(using: &rng)!
                case 1...8: bytes.append(interesting.randomElement(using: &rng)!)
                // Plain ASCII with line feeds, long enough for whole blocks of it: where AVX2 is
                // used, those take its short way, which counts only the line feeds.
                case 9, 10:
                    bytes += (0..<Int.random(in: 40...160, using: &rng)).map { _ in
                        Int.random(in: 0..<16, using: &rng) == 0 ? 0x0A : UInt8.random(in: 0x20...0x5B, using: &rng)
                    }
                default: bytes.append(UInt8.random(in: 0...255, using: &rng))
                }
            }
            bytes = Array(bytes.prefix(count))
            for start in stride(from: 0, to: count - 63, by: 64)
            where !bytes[start..<(start + 64)].contains(where: { $0 >= 0x80 || [0x0B, 0x0C, 0x5C].contains($0) }) {
                ordinaryBlocks += 1
            }
            let s = Self.summarize(bytes, checkingUTF8: false, baseline: baseline)
            let lastFeed = bytes.lastIndex(of: 0x0A)
            let isContinuation = { (b: UInt8) in b & 0xC0 == 0x80 }
            #expect(s.line_feeds == UInt64(bytes.filter { $0 == 0x0A }.count))
            #expect(s.last_line_feed == Int64(lastFeed ?? -1))
            #expect(s.continuations == UInt64(bytes.filter(isContinuation).count))
            let after = bytes[(lastFeed.map { $0 + 1 } ?? 0)...]
            #expect(s.continuations_after == UInt64(after.filter(isContinuation).count))
            #expect((s.non_ascii != 0) == bytes.contains { $0 >= 0x80 })
            #expect((s.suspicious != 0) == Self.needsStates(bytes), "\(bytes.map { String($0, radix: 16) })")
            #expect(s.invalid_utf8 == 0)
        }
        // Blocks of plain ASCII came up often.
        #expect(ordinaryBlocks > 100)
    }

    /// Whether a summary must flag `bytes`, read plainly: a form feed or vertical tab, or a
    /// `\uD` escape that is neither below U+D800 nor one half of a pair (a low half only right
    /// after a high one), or that follows another backslash. What the end cuts short counts
    /// as fine.
    static func needsStates(_ b: [UInt8]) -> Bool {
        if b.contains(0x0B) || b.contains(0x0C) { return true }
        func hexAt(_ i: Int, in set: String) -> Bool? { i < b.count ? set.utf8.contains(b[i] | 0x20) : nil }
        var expectedLow = -1
        for at in b.indices where b[at] == UInt8(ascii: "\\") {
            guard at + 2 < b.count, b[at + 1] == UInt8(ascii: "u"), b[at + 2] | 0x20 == UInt8(ascii: "d") else {
                continue
            }
            if at == 0 || b[at - 1] == UInt8(ascii: "\\") { return true }
            guard let third = hexAt(at + 3, in: "0123456789abcdef") else { continue }
            if !third { return true }
            if hexAt(at + 3, in: "01234567") == true { continue }
            if hexAt(at + 3, in: "cdef") == true {
                if at != expectedLow { return true }
                continue
            }
            // A high half: `\u`, `d` and one of c to f must follow its four digits.
            let rest = [
                (at + 6 < b.count ? b[at + 6] == UInt8(ascii: "\\") : nil),
                (at + 7 < b.count ? b[at + 7] == UInt8(ascii: "u") : nil),
                hexAt(at + 8, in: "d"), hexAt(at + 9, in: "cdef"),
            ]
            if let cut = rest.firstIndex(where: { $0 != true }), rest[cut] == false { return true }
            if rest.allSatisfy({ $0 == true }) { expectedLow = at + 6 }
        }
        return false
    }

    /// The summary's UTF-8 verdict against a plain reading of RFC 3629, for the path this
    /// processor uses and the baseline, at lengths on both sides of the vector path's (whole
    /// blocks, the last 64 bytes again, byte by byte below 68), with characters and errors
    /// anywhere, also across block edges, and a sequence cut short by the end accepted.
    @Test(arguments: [false, true])
    func utf8VerdictMatchesAPlainValidator(baseline: Bool) {
        var rng = SeededGenerator(seed: 3629)
        let characters: [[UInt8]] = ["a", "é", "☃", "😀", "\u{7FF}", "\u{800}", "\u{FFFF}", "\u{10000}", "\u{10FFFF}"]
            .map { Array($0.utf8) }
        let ascii = Array("plain text, with nothing else in it ".utf8)
        let hazards: [[UInt8]] = [
            [0x80], [0xC0, 0x80], [0xE0, 0x9F, 0x80], [0xED, 0xA0, 0x80], [0xF0, 0x8F, 0x80, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xFF], [0xE2, 0x82], [0xF0, 0x9F, 0x98],
        ]
        var rejected = 0
        for round in 0..<4000 {
            var text: [UInt8] = []
            let length = round % 400
            while text.count < length {
                switch Int.random(in: 0..<(length + 8), using: &rng) {
                case 0: text += hazards.randomElement(using: &rng)!
                case 1...8: text += characters.randomElement(using: &rng)!
                default: text += ascii.prefix(Int.random(in: 1...ascii.count, using: &rng))
                }
            }
            // Cut anywhere: the end may fall inside a character.
            let cut = Array(text.prefix(length))
            let expected = BlockScanTests.wellFormed(cut[...], allowingCutEnd: true)
            if !expected { rejected += 1 }
            let s = Self.summarize(cut, checkingUTF8: true, baseline: baseline)
            #expect((s.invalid_utf8 == 0) == expected, "\(cut.map { String($0, radix: 16) })")
        }
        // Both verdicts, often.
        #expect(rejected > 150)
        #expect(rejected < 3850)
    }
}
