@_spi(Testing) import FlatlandJSON
import Testing

/// A string that spans many chunks is handed to libyajl in one piece once it ends: libyajl reads
/// a token that spans calls again from its start at every call, which made a long string fed in
/// small chunks quadratic (16 MiB at 4 KiB chunks: 8.7 s, against 0.55 s for 4 MiB).
@Suite struct LongStringTests {
    /// `["xxx…"]` with a string of `length` bytes.
    static func document(length: Int, key: Bool = false) -> [UInt8] {
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: length)
        let open = Array((key ? #"{""# : #"[""#).utf8)
        let close = Array((key ? #"":1}"# : #""]"#).utf8)
        return open + body + close
    }

    @Test func aSixteenMebibyteStringAtFourKibibyteChunksIsReadOnce() throws {
        let bytes = Self.document(length: 16 << 20)
        let counter = CountingHandler()
        let parser = JSONStreamParser(handler: counter)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 4096)
            try parser.feed(bytes[start..<end])
            start = end
        }
        try parser.finish()
        #expect(counter.stringBytes == [16 << 20])
        // Before: every chunk made libyajl read the whole string so far again, about 32 GiB.
        #expect(parser.bytesReadByYAJL < 2 * bytes.count, "\(parser.bytesReadByYAJL) for \(bytes.count)")
        #expect(parser.bytesReadByYAJL >= bytes.count)
    }

    @Test(arguments: [1, 3, 64, 4096])
    func theHeldBytesAreTheStringsAndAreReleasedWhenItEnds(_ chunkSize: Int) throws {
        let bytes = Self.document(length: 20_000) + Array(#"  "#.utf8)
        let parser = JSONStreamParser(handler: CountingHandler())
        var start = 0
        var mostHeld = 0
        while start < bytes.count {
            let end = min(bytes.count, start + chunkSize)
            try parser.feed(bytes[start..<end])
            start = end
            #expect(parser.bytesConsumed == end)
            mostHeld = max(mostHeld, parser.heldByteCount)
            if end > 20_002 { #expect(parser.heldByteCount == 0) }
        }
        try parser.finish()
        #expect(mostHeld > 20_000 - 2 * chunkSize && mostHeld <= 20_000)
        #expect(parser.bytesReadByYAJL < 2 * bytes.count)
    }

    /// Documents whose long strings (values and keys) hold every escape and UTF-8 form, and
    /// documents with an error inside or at the end of a long string.
    static let documents: [[UInt8]] = {
        let long = String(repeating: #"ab\"\\\/\u00e9\ud83d\ude00é☃😀\n"#, count: 400)
        var docs: [[UInt8]] = [
            Array(#"{"\#(long)":["\#(long)",1,"\#(long)"],"k":"\#(long)"}"#.utf8),
            Array(#"["\#(long)","short","\#(long)"]"#.utf8),
            Array(#"["\#(long)"#.utf8),
            Array(#"["\#(long)\u00"#.utf8),
            Array(#"["\#(long)\ud800\#(long)"]"#.utf8),
            Array(#"["\#(long)\q\#(long)"]"#.utf8),
            Array("[\"\(long)\u{01}\(long)\"]".utf8),
            Array(#"["\#(long)" "\#(long)"]"#.utf8),
        ]
        docs.append(rawBytes(#"["\#(long)\xC3\x28\#(long)"]"#))
        docs.append(rawBytes(#"["\#(long)\xED\xA0\x80"]"#))
        return docs
    }()

    @Test(arguments: 0..<documents.count)
    func holdingChangesNoEventAndNoError(_ index: Int) {
        let bytes = Self.documents[index]
        let options = [
            JSONParserOptions.strict, JSONParserOptions(allowComments: true),
            JSONParserOptions(replaceInvalidUTF8: true),
            JSONParserOptions(limits: JSONLimits(maxStringLength: 3000, maxKeyLength: 100, maxTotalBytes: 9000)),
        ]
        for option in options {
            let reference = parse(bytes, chunkSize: nil, options: option) { $0.holdsStrings = false }
            for size in [1, 2, 7, 64, 100, 4096] {
                var parser: JSONStreamParser?
                let held = parse(bytes, chunkSize: size, options: option) { parser = $0 }
                #expect(held == reference, "chunk size \(size), \(option)")
                #expect(parser?.heldByteCount == 0)
            }
        }
    }

    @Test func anErrorInAHeldChunkIsReportedByTheFeedOfThatChunk() throws {
        let parser = JSONStreamParser(handler: CountingHandler())
        try parser.feed(Array(#"["abc"#.utf8))
        try parser.feed([UInt8](repeating: UInt8(ascii: "x"), count: 500))
        #expect(parser.heldByteCount == 500)
        let error = try #require(throws: JSONError.self) {
            try parser.feed([UInt8](repeating: UInt8(ascii: "y"), count: 10) + [0x01, 0x41])
        }
        #expect(error.code == .syntax)
        #expect(error.location?.offset == 5 + 500 + 10)
        #expect(throws: JSONError.self) { try parser.finish() }
    }

    /// What libyajl checks in a string, not the states (control characters and escapes), is
    /// reported by the feed of the chunk that holds it, wherever a chunk boundary cuts it.
    @Test(arguments: ["\u{1F}", #"\q"#, #"\u12G4"#, #"\u"#, #"\"#, #"\ud83d\x"#, #"\ud83d\u"#])
    func whatLibyajlRejectsInAHeldChunkIsReportedByItsFeed(_ bad: String) throws {
        let bytes = Array((#"["abc"# + String(repeating: "x", count: 300) + bad + "yyyy").utf8)
        let reference = parse(bytes + Array(#""]"#.utf8), chunkSize: nil) { $0.holdsStrings = false }
        let expected = try #require(reference.error)
        for cut in 300..<bytes.count {
            let parser = JSONStreamParser(handler: Recorder())
            var caught: JSONError?
            do throws(JSONError) {
                try parser.feed(bytes[..<200])
                try parser.feed(bytes[200..<cut])
                try parser.feed(bytes[cut...])
            } catch {
                caught = error
            }
            #expect(caught == expected, "cut at \(cut)")
        }
    }

    @Test func aStringLongerThanItsLimitIsRejectedBeforeItIsHeldWhole() throws {
        let options = JSONParserOptions(limits: JSONLimits(maxStringLength: 1000))
        let parser = JSONStreamParser(handler: CountingHandler(), options: options)
        try parser.feed(Array(#"[""#.utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 100)
        var error: JSONError?
        for _ in 0..<20 where error == nil {
            do throws(JSONError) { try parser.feed(chunk) } catch let failure { error = failure }
            #expect(parser.heldByteCount <= 1000)
        }
        #expect(error?.code == .limit)
        #expect(error?.location?.offset == 2 + 1000)
    }
}

/// Counts what it is sent; keeps the length of each string.
final class CountingHandler: JSONEventHandler {
    var stringBytes: [Int] = []
    var events = 0

    func beginObject() { events += 1 }
    func endObject() { events += 1 }
    func beginArray() { events += 1 }
    func endArray() { events += 1 }
    func key(_ key: JSONBytes) { events += 1 }
    func string(_ value: JSONBytes) {
        events += 1
        stringBytes.append(value.count)
    }
    func number(_ value: JSONNumberText) { events += 1 }
    func bool(_ value: Bool) { events += 1 }
    func null() { events += 1 }
}
