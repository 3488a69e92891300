import FlatlandJSON
import Testing

/// Splitting the input into chunks of any size must not change anything: the same events for
/// valid input, the same events and the same error (code, message, location, excerpt) for
/// invalid input.
@Suite struct ChunkInvarianceTests {
    /// Valid documents that put every escape form, every UTF-8 sequence length, deep nesting and
    /// every number shape across chunk boundaries.
    static let validCorpus: [String] = {
        var corpus: [String] = [
            #"["\" \\ \/ \b \f \n \r \t", "\u0041\u00e9\u20AC\ud83d\ude00\u0000\u001f", "\uDBFF\uDFFF"]"#,
            #"{"é":"ü","☃":"€","😀":"𝄞","中文":"日本語","mixed":"aé☃😀z"}"#,
            #"[0,-0,1,-1,0.5,-0.5,1e5,1E5,1e+5,1e-5,-1.5E-300,2.5e300,0e0,-0.0e-0,123.456e-7]"#,
            #"[9223372036854775807,-9223372036854775808,18446744073709551615,9007199254740993]"#,
            #"[10765432100123456789,1e400,1e-400,100000000000000000000000000000000000000001]"#,
            #"{"offset":12,"count":2,"total":47,"data":[{"uuid":"u-lQ7tSlU4A9OmDjIefiOEMG5Dsy02Yt3q","#
                + #""name":"Ada","age":36,"ok":true,"gone":false,"x":null,"tags":[],"meta":{}}]}"#,
            " \t\r\n[ 1 ,\r\n\t2 ]\n ",
            #""a string at the top""#, "12345", "-0.5e-3", "true", "false", "null", "[]", "{}",
            #"{"dup":1,"dup":2,"b":[1,{"dup":[3]}]}"#,
        ]
        // A multi-byte character at every offset modulo 8, so each of its bytes meets a boundary.
        for pad in 0..<8 {
            let a = String(repeating: "a", count: pad)
            corpus.append(#"["\#(a)é\#(a)☃\#(a)😀\#(a)\u00e9\#(a)\ud83d\ude00"]"#)
            corpus.append(#"{"\#(a)ключ😀":"\#(a)𝄞"}"#)
        }
        // Deep nesting of arrays and objects.
        corpus.append(String(repeating: #"{"a":["#, count: 200) + "1" + String(repeating: "]}", count: 200))
        corpus.append(String(repeating: "[", count: 512) + String(repeating: "]", count: 512))
        // Long strings and numbers that span many chunks.
        corpus.append(#"[""# + String(repeating: "x\\n😀", count: 500) + #""]"#)
        corpus.append("[" + String(repeating: "9", count: 1000) + ".5e-10]")
        return corpus
    }()

    @Test(arguments: validCorpus)
    func validInputGivesTheSameEventsInEveryChunking(_ text: String) {
        let (outcome, differences) = parseAllChunkings(text.bytes)
        #expect(outcome.error == nil, "\(outcome)")
        #expect(!outcome.events.isEmpty)
        #expect(differences.isEmpty, "\(differences)")
    }

    @Test func escapesAreDecoded() throws {
        let (outcome, differences) = parseAllChunkings(ChunkInvarianceTests.validCorpus[0].bytes)
        #expect(differences.isEmpty)
        #expect(
            outcome.events == [
                .beginArray, .string("\" \\ / \u{08} \u{0C} \n \r \t"), .string("Aé€😀\u{0}\u{1F}"),
                .string("\u{10FFFF}"), .endArray,
            ])
    }

    @Test func multiByteTextArrivesIntact() {
        for pad in 0..<8 {
            let a = String(repeating: "a", count: pad)
            let text = #"["\#(a)é\#(a)☃\#(a)😀\#(a)\u00e9\#(a)\ud83d\ude00"]"#
            for size in chunkings {
                let outcome = parse(text.bytes, chunkSize: size)
                #expect(outcome.events == [.beginArray, .string("\(a)é\(a)☃\(a)😀\(a)é\(a)😀"), .endArray])
            }
        }
    }

    /// Invalid documents: each error kind, with the offending token or byte placed so that chunk
    /// boundaries cut it in every possible way.
    static let invalidCorpus: [String] = {
        var corpus: [String] = [
            "[1,2,3 4]", #"{"a":1 "bcdefgh"}"#, #"{"a":1 2345}"#, #"[1 "abcdefghij"]"#, #"{"a" "b"}"#,
            #"{"a" 12345}"#, "[1,]", #"{"a":1,}"#, #"{"a":1,23}"#, "{1:2}", "{true:1}", "[01]", "0123",
            "truefalse", "[true1234567]", "[1] x", "[1] 12", "[1] \"abc\"", "[1] \"abc", #"[1, "abc"#,
            "[", "{", #"{"a""#, #"{"a":"#, "[1}", #"{"a":1]"#, "[1,,2]", "{:1}", #"{"a"::1}"#, "]", "}",
            ":", ",", "[-]", "[1.]", "[1e]", "[1e+]", "[.5]", "[+1]", "[NaN]", "[Infinity]", "[-Infinity]",
            "['x']", "[tru]", "nul", "[nulll]", "[\"a\u{01}b\"]", "[\"a\nb\"]", #"["\q"]"#, #"["\u12g4"]"#,
            #"["\ud800"]"#, #"["\ud800\u0041"]"#, #"["\udc00"]"#, #"["\udc00\ud800"]"#, #"["\ud800\"]"#,
            "[1,\u{0C}2]", "[1,\u{0B}2]", "\u{FEFF}[]", "[1]\u{0C}", "[\"é☃😀\"] x", "/* c */ [1]", "[1] // c",
            "", " \n\t ", "[1\n,\n2\n3]", "{\n\"a\"\n:\n1\n\"b\"}",
        ]
        for pad in 0..<6 {
            // Restore-style errors where the rejected token follows a long run of whitespace.
            corpus.append(
                "[1" + String(repeating: " ", count: 60 + pad) + "\"" + String(repeating: "s", count: 70) + "\"]")
            corpus.append("[true" + String(repeating: "7", count: 60 + pad) + "]")
            corpus.append("[é" + String(repeating: "a", count: pad) + "]")
        }
        return corpus
    }()

    static let invalidBytes: [[UInt8]] = [
        rawBytes(#"["\xC0\xAF"]"#), rawBytes(#"["\xE0\x80\xAF"]"#), rawBytes(#"["\xED\xA0\x80"]"#),
        rawBytes(#"["\xF4\x90\x80\x80"]"#), rawBytes(#"["\xE2\x82"]"#), rawBytes(#"["ok\x80"]"#),
        rawBytes(#"["\xF0\x9F\x98"]"#), rawBytes(#"["\xFF"]"#), rawBytes(#"["é☃"]\#n["😀\xC3\x28"]"#),
        rawBytes(#"[1,\x80]"#), rawBytes(#"\xEF\xBB\xBF{}"#),
    ]

    @Test(arguments: invalidCorpus.map(\.bytes) + invalidBytes)
    func invalidInputGivesTheSameErrorInEveryChunking(_ bytes: [UInt8]) throws {
        let (outcome, differences) = parseAllChunkings(bytes)
        let error = try #require(outcome.error, "accepted \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        let location = try #require(error.location)
        #expect(location.offset >= 0 && location.offset <= bytes.count)
        #expect(differences.isEmpty, "\(differences)")
    }

    /// Every split point, not only fixed chunk sizes: two chunks cut at each offset.
    @Test(arguments: [
        #"{"a":1 "bcdefgh"}"#, "[1,2,3 4]", #"["é☃😀", 12 13]"#, #"{"x":[1,2],"y":{"z":"\ud83d\ude00"} "w"}"#,
        "[true false]", "[123.5e7 -9]", #"["\ud800\u0041"]"#,
    ])
    func everySplitPointGivesTheSameOutcome(_ text: String) {
        let bytes = text.bytes
        let whole = parse(bytes, chunkSize: nil)
        for cut in 0...bytes.count {
            let recorder = Recorder()
            let parser = JSONStreamParser(handler: recorder)
            var outcome: Outcome
            do throws(JSONError) {
                try parser.feed(bytes[..<cut])
                try parser.feed(bytes[cut...])
                try parser.finish()
                outcome = Outcome(events: recorder.events, error: nil)
            } catch {
                outcome = Outcome(events: recorder.events, error: error)
            }
            #expect(outcome == whole, "cut at \(cut)")
        }
    }

    @Test func nonContiguousSequencesAreFedToo() throws {
        let text = #"{"a":[1,"é"]}"#
        let builder = JSONValueBuilder()
        let parser = JSONStreamParser(handler: builder)
        try parser.feed(AnySequence(text.utf8.prefix(5)))
        try parser.feed(AnySequence(text.utf8.dropFirst(5)))
        try parser.finish()
        #expect(builder.values == [["a": [1, "é"]]])
    }
}
