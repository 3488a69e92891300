import FlatlandJSON
import Testing

/// Errors say where: byte offset, 1-based line, and a 1-based column that counts Unicode
/// scalars, whatever the chunking.
@Suite struct LocationTests {
    /// Parses `bytes` with every chunking, checks that all agree, and returns the error.
    private func error(
        _ bytes: [UInt8], options: JSONParserOptions = .strict, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> JSONError {
        let (outcome, differences) = parseAllChunkings(bytes, options: options)
        #expect(differences.isEmpty, "\(differences)", sourceLocation: sourceLocation)
        return try #require(outcome.error, sourceLocation: sourceLocation)
    }

    /// The byte offset of the first occurrence of `needle` in `text`.
    private func offset(of needle: String, in text: String) throws -> Int {
        let hay = Array(text.utf8)
        let pin = Array(needle.utf8)
        let found = (0...(hay.count - pin.count)).first { hay[$0..<($0 + pin.count)].elementsEqual(pin) }
        return try #require(found, "\(needle) not in \(text)")
    }

    @Test func lineAndColumnOnMultiLineInputCountScalars() throws {
        let text = "{\n  \"name\": \"Zoë\",\n  \"city\": \"東京\", x\n}"
        let e = try error(text.bytes)
        #expect(e.code == .syntax)
        #expect(e.message == "unexpected character 'x'")
        // Line 3 is `  "city": "東京", x`: 16 scalars before the x, though 東京 is 6 bytes.
        #expect(e.location == JSONLocation(offset: try offset(of: "x", in: text), line: 3, column: 17))
        #expect(e.excerpt.hasSuffix("\"東京\", x"))
        #expect(e.description == "3:17: unexpected character 'x'")
    }

    @Test func invalidUTF8AfterNonASCIIText() throws {
        let bytes = rawBytes("[\"Grüße\",\n \"😀☃é \\xC0\\xAF\"]")
        let e = try error(bytes)
        #expect(e.code == .invalidUTF8)
        #expect(e.message.contains("overlong"))
        let at = try #require(bytes.firstIndex(of: 0xC0))
        // Line 2 is ` "😀☃é \xC0`: space, quote, three scalars, space: column 7.
        #expect(e.location == JSONLocation(offset: at, line: 2, column: 7))
    }

    @Test func missingCommaPointsAtTheNextTokenStart() throws {
        let text = "[\n  1,\n  \"ä\" \"second\"\n]"
        let e = try error(text.bytes)
        #expect(e.message == "after array element, I expect ',' or ']'")
        #expect(e.location == JSONLocation(offset: try offset(of: "\"second", in: text), line: 3, column: 7))
    }

    @Test func tokenThatSpansManyChunksIsLocatedAtItsStart() throws {
        // The rejected string begins long before the chunk in which libyajl rejects it.
        let long = String(repeating: "ü", count: 300)
        let text = "[\n1 \"\(long)\"]"
        let e = try error(text.bytes)
        #expect(e.location == JSONLocation(offset: 4, line: 2, column: 3))
        #expect(e.excerpt == "[ 1 \"")
        let number = "[true" + String(repeating: "4", count: 200) + "]"
        let n = try error(number.bytes)
        #expect(n.location?.offset == 5)
    }

    @Test func errorsAtTheEndOfInputPointAtTheEnd() throws {
        let text = "{\n\"a\": [1,\n2"
        let e = try error(text.bytes)
        #expect(e.code == .truncated)
        #expect(e.location == JSONLocation(offset: text.utf8.count, line: 3, column: 2))
        let empty = try error([])
        #expect(empty.location == JSONLocation(offset: 0, line: 1, column: 1))
        #expect(empty.message == "empty input: expected a JSON value")
    }

    @Test func lexicalErrorsPointAtTheOffendingByte() throws {
        let cases: [(String, String)] = [
            ("[tRue]", "R"), ("[1.x]", "x"), ("[-a]", "a"), (#"["\x"]"#, "x"), (#"["\u12z4"]"#, "z"),
            ("[1, @]", "@"), ("[1e+]", "]"),
        ]
        for (text, at) in cases {
            let e = try error(text.bytes)
            #expect(e.location?.offset == (try offset(of: at, in: text)), "\(text): \(e)")
        }
    }

    @Test func surrogateErrorsPointAtTheEscape() throws {
        let text = #"["ab\ud800cd"]"#
        let e = try error(text.bytes)
        #expect(e.code == .invalidUTF8)
        #expect(e.location?.offset == (try offset(of: "\\ud800", in: text)))
        let low = #"["é\udc00"]"#
        let l = try error(low.bytes)
        #expect(l.location == JSONLocation(offset: try offset(of: "\\udc00", in: low), line: 1, column: 4))
    }

    @Test func excerptShowsTheTextBeforeTheError() throws {
        let e = try error(#"{"key": 1 "next": 2}"#.bytes)
        #expect(e.excerpt == #"{"key": 1 ""#)
        let long = "[" + String(repeating: "1,", count: 40) + "]"
        let l = try error(long.bytes)
        #expect(l.excerpt == String(repeating: "1,", count: 12) + "]")
        let lines = try error("[1,\n\t2,\n]".bytes)
        #expect(lines.excerpt == "[1,  2, ]", "control characters show as spaces")
    }
}
