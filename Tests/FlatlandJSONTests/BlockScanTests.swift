import CFlatlandSIMD
import FlatlandJSON
import Testing

/// The strict scanner takes whole 64-byte blocks with bit masks and everything else byte by
/// byte. Chunks shorter than 64 bytes never hold a whole block, so parsing the same bytes whole
/// and in small chunks compares the two paths: the events and the error (code, message,
/// location, excerpt) must be the same.
@Suite struct BlockScanTests {
    /// Pieces that documents are built from: every escape, UTF-8 of each length, line feeds,
    /// numbers and literals, so that block edges fall inside each of them somewhere.
    static let words: [String] = [
        "plain", "with space", #"q\"uote"#, #"back\\slash"#, #"\/\b\f\n\r\t"#, #"\u0041\u00e9"#,
        #"\ud83d\ude00"#, "é", "☃", "😀", "日本語のテキスト", "𝄞x", "ключ", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        #"\\"#, #"\\\""#, "", "0123456789",
    ]

    static func value(_ rng: inout SeededGenerator, depth: Int) -> String {
        switch Int.random(in: 0..<(depth > 4 ? 6 : 9), using: &rng) {
        case 0: return String(Int.random(in: -99_999...99_999, using: &rng))
        case 1:
            return
                "-\(Int.random(in: 0...9, using: &rng)).\(Int.random(in: 0...999_999, using: &rng))e+1\(Int.random(in: 0...9, using: &rng))"
        case 2: return ["true", "false", "null"][Int.random(in: 0..<3, using: &rng)]
        case 3: return String(repeating: "7", count: Int.random(in: 1...80, using: &rng))
        case 4, 5: return "\"" + string(&rng) + "\""
        case 6, 7:
            let n = Int.random(in: 0...5, using: &rng)
            let members = (0..<n).map { _ in "\"\(string(&rng))\":" + space(&rng) + value(&rng, depth: depth + 1) }
            return "{" + members.joined(separator: "," + space(&rng)) + "}"
        default:
            let n = Int.random(in: 0...5, using: &rng)
            return "[" + (0..<n).map { _ in value(&rng, depth: depth + 1) }.joined(separator: "," + space(&rng)) + "]"
        }
    }

    static func string(_ rng: inout SeededGenerator) -> String {
        (0..<Int.random(in: 0...4, using: &rng)).map { _ in words.randomElement(using: &rng)! }.joined()
    }

    static func space(_ rng: inout SeededGenerator) -> String {
        ["", "", " ", "\n", "\n    ", "\r\n\t"].randomElement(using: &rng)!
    }

    /// Bytes that the strict checks reject, or that change the structure, spliced in at random.
    static let hazards: [[UInt8]] = [
        [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0x80],
        [0xFF], [0x0C], [0x0B], Array(#"\ud800"#.utf8), Array(#"\udc00"#.utf8), Array(#"\u12"#.utf8),
        Array(#"\"#.utf8), Array(#"""#.utf8), Array("{".utf8), Array("]".utf8), Array(",".utf8), [0x0A],
        Array(String(repeating: "9", count: 70).utf8), Array(String(repeating: "x", count: 70).utf8),
    ]

    static func documents(count: Int, seed: UInt64) -> [[UInt8]] {
        var rng = SeededGenerator(seed: seed)
        var documents: [[UInt8]] = []
        while documents.count < count {
            var bytes = Array(("[" + (0..<8).map { _ in value(&rng, depth: 0) }.joined(separator: ",\n") + "]").utf8)
            if bytes.count < 128 { continue }
            if Bool.random(using: &rng) {
                let at = Int.random(in: 0...bytes.count, using: &rng)
                bytes.insert(contentsOf: hazards.randomElement(using: &rng)!, at: at)
            }
            documents.append(bytes)
        }
        return documents
    }

    static let variants: [JSONParserOptions] = {
        var tight = JSONParserOptions.strict
        tight.limits = JSONLimits(maxDepth: 4, maxStringLength: 70, maxKeyLength: 64, maxNumberLength: 66)
        var lenient = JSONParserOptions.strict
        lenient.replaceInvalidUTF8 = true
        return [.strict, tight, lenient]
    }()

    @Test(arguments: 0..<3)
    func blocksAndBytesAgree(_ variant: Int) {
        let options = Self.variants[variant]
        var valid = 0
        var invalid = 0
        for bytes in Self.documents(count: 300, seed: 0xF1A7 + UInt64(variant)) {
            let whole = parse(bytes, chunkSize: nil, options: options)
            if whole.error == nil { valid += 1 } else { invalid += 1 }
            for size in [1, 37, 77] {
                let chunked = parse(bytes, chunkSize: size, options: options)
                #expect(
                    chunked == whole,
                    "chunk size \(size) of \(String(decoding: bytes, as: UTF8.self).debugDescription): \(chunked) vs whole: \(whole)"
                )
            }
        }
        // Both paths must have been through valid documents and through errors.
        #expect(valid > 30)
        #expect(invalid > 30)
    }

    /// The SIMD masks, byte for byte against the plain definition: the path this processor
    /// uses and the baseline every processor of its architecture has.
    @Test(arguments: [false, true])
    func masksMatchTheirDefinition(baseline: Bool) {
        var rng = SeededGenerator(seed: 64)
        let interesting: [UInt8] = [
            0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x0A, 0x0B, 0x0C, 0x80, 0xBF, 0xC0, 0xFF, 0x3A,
        ]
        for _ in 0..<2000 {
            let block: [UInt8] = (0..<64).map { _ in
                Bool.random(using: &rng)
                    ? interesting.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            }
            var m = flatland_block_masks()
            block.withUnsafeBufferPointer {
                if baseline {
                    flatland_classify_block_baseline($0.baseAddress!, &m)
                } else {
                    flatland_classify_block($0.baseAddress!, &m)
                }
            }
            func mask(_ test: (UInt8) -> Bool) -> UInt64 {
                var bits: UInt64 = 0
                for (i, b) in block.enumerated() where test(b) { bits |= 1 << UInt64(i) }
                return bits
            }
            #expect(m.quote == mask { $0 == 0x22 })
            #expect(m.backslash == mask { $0 == 0x5C })
            #expect(m.non_ascii == mask { $0 >= 0x80 })
            #expect(m.continuation == mask { $0 & 0xC0 == 0x80 })
            #expect(m.line_feed == mask { $0 == 0x0A })
            #expect(m.bracket == mask { [0x7B, 0x7D, 0x5B, 0x5D].contains($0) })
            #expect(m.comma == mask { $0 == 0x2C })
            #expect(m.vertical_space == mask { $0 == 0x0B || $0 == 0x0C })
        }
    }

    /// UTF-8 at the edges of the 64-byte blocks: a byte that can never lead at a block's last
    /// byte (its pair would be judged in the next block, which may be all ASCII), sequences cut
    /// by the edge whose next byte is wrong, and the same well-formed; with a character earlier
    /// in the block, so that the block's UTF-8 is checked with vector lookups where it can be.
    @Test(
        arguments: [
            [0xFF], [0xC0], [0xC1], [0xF5], [0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xE2, 0x82, 0x41], [0xF0, 0x9F, 0x98, 0x41], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xC3, 0xA9],
        ] as [[UInt8]])
    func utf8AtBlockEdges(_ sequence: [UInt8]) {
        for offset in 60...64 {
            // `["é` then ASCII up to `offset` (block-relative), the sequence, then ASCII blocks.
            var bytes = Array(#"["é"#.utf8)
            bytes += Array(repeating: UInt8(ascii: "a"), count: offset - bytes.count)
            bytes += sequence
            bytes += Array(repeating: UInt8(ascii: "b"), count: 150) + Array(#""]"#.utf8)
            let whole = parse(bytes, chunkSize: nil)
            let wellFormed = Self.wellFormed(sequence[...], allowingCutEnd: false)
            #expect((whole.error == nil) == wellFormed, "\(sequence) at \(offset): \(whole)")
            if let error = whole.error {
                let at = error.location?.offset ?? -1
                #expect(at >= offset && at < offset + sequence.count, "\(sequence) at \(offset): \(error)")
            }
            #expect(parse(bytes, chunkSize: 1) == whole, "\(sequence) at \(offset)")
        }
    }

    /// Whether this processor checks UTF-8 with vector lookups (elsewhere the scanner checks
    /// multi-byte characters one by one, which the conformance tests cover).
    static let vectorUTF8Check = [UInt8](repeating: 0x61, count: 64).withUnsafeBufferPointer {
        flatland_utf8_block_check($0.baseAddress!, 0) >= 0
    }

    /// Where the processor checks UTF-8 with vector lookups, the verdict for a block (after the
    /// three bytes before it) matches a plain reading of RFC 3629: text before the block that is
    /// well-formed, then the block, where only a sequence cut short by the block's end may remain.
    @Test(.enabled(if: vectorUTF8Check, "this processor has no vector UTF-8 check"))
    func utf8CheckMatchesAPlainValidator() {
        var rng = SeededGenerator(seed: 3629)
        let characters: [[UInt8]] = [
            "a", "é", "ß", "☃", "日", "€", "😀", "𝄞", "\u{7FF}", "\u{800}", "\u{FFFF}", "\u{10000}", "\u{10FFFF}",
        ]
        .map { Array($0.utf8) }
        let hazards: [[UInt8]] = [
            [0x80], [0xBF], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x9F, 0x80], [0xED, 0xA0, 0x80],
            [0xF0, 0x8F, 0x80, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xE2, 0x82], [0xC3], [0xF0, 0x9F, 0x98],
        ]
        var checked = 0
        var rejected = 0
        for _ in 0..<3000 {
            var text: [UInt8] = []
            while text.count < 80 {
                if Int.random(in: 0..<40, using: &rng) == 0, text.count > 4 {
                    text += hazards.randomElement(using: &rng)!
                } else {
                    text += characters.randomElement(using: &rng)!
                }
            }
            // The block starts anywhere after four well-formed bytes, even inside a character.
            let start = Int.random(in: 4...(text.count - 64), using: &rng)
            guard Self.wellFormed(text[0..<start], allowingCutEnd: true) else { continue }
            let verdict = text.withUnsafeBufferPointer { flatland_utf8_block_check($0.baseAddress! + start, 1) }
            #expect(verdict >= 0)
            checked += 1
            let expected = Self.wellFormed(text[0..<(start + 64)], allowingCutEnd: true)
            if !expected { rejected += 1 }
            #expect((verdict == 0) == expected, "\(text[(start - 3)..<(start + 64)].map { String($0, radix: 16) })")
            // Without the bytes before it, the block is read from the start of a character.
            let alone = text.withUnsafeBufferPointer { flatland_utf8_block_check($0.baseAddress! + start, 0) }
            #expect((alone == 0) == Self.wellFormed(text[start..<(start + 64)], allowingCutEnd: true))
        }
        // Both verdicts occur, often.
        #expect(checked > 1000)
        #expect(rejected > 100)
        #expect(checked - rejected > 100)
    }

    /// RFC 3629's table of well-formed byte sequences; a sequence cut short by the end counts as
    /// well-formed when `allowingCutEnd`.
    static func wellFormed(_ bytes: ArraySlice<UInt8>, allowingCutEnd: Bool) -> Bool {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let lead = bytes[i]
            let (length, lo, hi): (Int, UInt8, UInt8) =
                switch lead {
                case 0x00...0x7F: (1, 0, 0)
                case 0xC2...0xDF: (2, 0x80, 0xBF)
                case 0xE0: (3, 0xA0, 0xBF)
                case 0xED: (3, 0x80, 0x9F)
                case 0xE1...0xEF: (3, 0x80, 0xBF)
                case 0xF0: (4, 0x90, 0xBF)
                case 0xF1...0xF3: (4, 0x80, 0xBF)
                case 0xF4: (4, 0x80, 0x8F)
                default: (0, 0, 0)
                }
            if length == 0 { return false }
            for k in 1..<max(length, 1) {
                guard i + k < bytes.endIndex else { return allowingCutEnd }
                let c = bytes[i + k]
                if k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF) { return false }
            }
            i += length
        }
        return true
    }
}
