import FlatlandJSON
import Testing

/// One accept/reject case of the conformance table.
struct ConformanceCase: Sendable, CustomTestStringConvertible {
    enum Verdict: Sendable {
        case accept
        case reject(JSONError.Code)
    }
    let input: [UInt8]
    let verdict: Verdict
    let reason: String
    var options: JSONParserOptions = .strict

    init(_ text: String, _ verdict: Verdict, _ reason: String, options: JSONParserOptions = .strict) {
        self.init(bytes: text.bytes, verdict, reason, options: options)
    }

    init(bytes: [UInt8], _ verdict: Verdict, _ reason: String, options: JSONParserOptions = .strict) {
        self.input = bytes
        self.verdict = verdict
        self.reason = reason
        self.options = options
    }

    var testDescription: String { reason }
}

/// RFC 8259 conformance, stricter than libyajl alone. Each case says why it is accepted or
/// rejected, and a rejection names the error code.
@Suite struct ConformanceTests {
    static let strictCases: [ConformanceCase] = [
        // Whitespace.
        .init(" \t\r\n[ 1 ]\r\n", .accept, "space, tab, CR and LF are whitespace"),
        .init("[1,\u{0C}2]", .reject(.syntax), "form feed is not whitespace (libyajl accepts it)"),
        .init("[1,\u{0B}2]", .reject(.syntax), "vertical tab is not whitespace (libyajl accepts it)"),
        .init("[1]\u{0C}", .reject(.syntax), "form feed after the value"),
        .init("[\"\u{0C}\"]", .reject(.syntax), "a raw form feed inside a string is an unescaped control character"),
        .init(#"["\f"]"#, .accept, "an escaped form feed is fine"),
        // Empty input and the byte-order mark.
        .init("", .reject(.truncated), "empty input is not a JSON text"),
        .init(" \n\t ", .reject(.truncated), "whitespace only is not a JSON text"),
        .init(bytes: rawBytes(#"\xEF\xBB\xBF[1]"#), .reject(.syntax), "RFC 8259 says MUST NOT add a byte-order mark"),
        .init("\u{FEFF}", .reject(.syntax), "a byte-order mark alone"),
        // Invalid UTF-8.
        .init(bytes: rawBytes(#"["\xC0\xAF"]"#), .reject(.invalidUTF8), "overlong 2-byte encoding of '/'"),
        .init(bytes: rawBytes(#"["\xC1\xBF"]"#), .reject(.invalidUTF8), "overlong 2-byte lead C1"),
        .init(bytes: rawBytes(#"["\xE0\x80\xAF"]"#), .reject(.invalidUTF8), "overlong 3-byte encoding"),
        .init(bytes: rawBytes(#"["\xF0\x80\x80\xAF"]"#), .reject(.invalidUTF8), "overlong 4-byte encoding"),
        .init(bytes: rawBytes(#"["\xED\xA0\x80"]"#), .reject(.invalidUTF8), "UTF-8-encoded surrogate U+D800"),
        .init(bytes: rawBytes(#"["\xED\xBF\xBF"]"#), .reject(.invalidUTF8), "UTF-8-encoded surrogate U+DFFF"),
        .init(bytes: rawBytes(#"["\xF4\x90\x80\x80"]"#), .reject(.invalidUTF8), "code point above U+10FFFF"),
        .init(bytes: rawBytes(#"["\xF5\x80\x80\x80"]"#), .reject(.invalidUTF8), "lead byte F5 never appears"),
        .init(bytes: rawBytes(#"["\xFF"]"#), .reject(.invalidUTF8), "byte FF never appears"),
        .init(bytes: rawBytes(#"["\xE2\x82"]"#), .reject(.invalidUTF8), "truncated 3-byte sequence before the quote"),
        .init(bytes: rawBytes(#"["\xF0\x9F\x98"]"#), .reject(.invalidUTF8), "truncated 4-byte sequence"),
        .init(bytes: rawBytes(#"["\xC3"]"#), .reject(.invalidUTF8), "truncated 2-byte sequence"),
        .init(bytes: rawBytes(#"["a\x80b"]"#), .reject(.invalidUTF8), "stray continuation byte"),
        .init(bytes: rawBytes(#"{"\xBF":1}"#), .reject(.invalidUTF8), "stray continuation byte in a key"),
        .init(bytes: rawBytes(#"["\xC3\x28"]"#), .reject(.invalidUTF8), "lead byte followed by ASCII"),
        .init(bytes: rawBytes(#"["\xEF\xBF\xBF\xF4\x8F\xBF\xBF"]"#), .accept, "U+FFFF and U+10FFFF are valid"),
        .init(bytes: rawBytes(#"["\xED\x9F\xBF\xEE\x80\x80"]"#), .accept, "U+D7FF and U+E000 border the surrogates"),
        .init(bytes: rawBytes(#"[1,\x80]"#), .reject(.syntax), "a non-ASCII byte outside a string"),
        // \u escapes and surrogates.
        .init(#"["\ud83d\ude00"]"#, .accept, "a surrogate pair"),
        .init(#"["\uD83D\uDE00"]"#, .accept, "a surrogate pair in upper case hex"),
        .init(#"["\ud800"]"#, .reject(.invalidUTF8), "lone high surrogate (libyajl makes it '?')"),
        .init(#"["\ud800x"]"#, .reject(.invalidUTF8), "high surrogate followed by text"),
        .init(#"["\ud800\n"]"#, .reject(.invalidUTF8), "high surrogate followed by another escape"),
        .init(#"["\ud800\u0041"]"#, .reject(.invalidUTF8), "high surrogate followed by a non-surrogate escape"),
        .init(#"["\ud800\ud800"]"#, .reject(.invalidUTF8), "two high surrogates"),
        .init(#"["\udc00"]"#, .reject(.invalidUTF8), "lone low surrogate (libyajl emits invalid UTF-8)"),
        .init(#"["\udc00\ud800"]"#, .reject(.invalidUTF8), "inverted surrogate pair"),
        .init(#"{"\ud800":1}"#, .reject(.invalidUTF8), "lone surrogate in a key"),
        .init(#"["\u0000"]"#, .accept, "an escaped NUL is a valid character"),
        .init(#"["\u12g4"]"#, .reject(.syntax), "non-hex digit in a \\u escape"),
        .init(#"["\u12"]"#, .reject(.syntax), "short \\u escape"),
        .init(#"["\q"]"#, .reject(.syntax), "unknown escape"),
        .init(#"["\'"]"#, .reject(.syntax), "\\' is not a JSON escape"),
        // Control characters.
        .init("[\"a\u{01}b\"]", .reject(.syntax), "unescaped U+0001 in a string"),
        .init("[\"a\nb\"]", .reject(.syntax), "unescaped line feed in a string"),
        .init("[\"a\tb\"]", .reject(.syntax), "unescaped tab in a string"),
        .init(bytes: rawBytes(#"["a\x00b"]"#), .reject(.syntax), "raw NUL in a string"),
        .init("[\"a\u{7F}b\"]", .accept, "DEL is not a control character for JSON"),
        .init("[1,\u{01}]", .reject(.syntax), "a control character outside a string"),
        // Trailing garbage and several values.
        .init("[1] x", .reject(.syntax), "garbage after the value"),
        .init("[1][2]", .reject(.syntax), "two values without allowMultipleValues"),
        .init("1 2", .reject(.syntax), "two numbers"),
        .init("[1] \"abc", .reject(.truncated), "an unterminated string after the value (libyajl accepts it)"),
        .init("{}\n", .accept, "trailing whitespace is fine"),
        // Trailing commas.
        .init("[1,]", .reject(.syntax), "trailing comma in an array"),
        .init(#"{"a":1,}"#, .reject(.syntax), "trailing comma in an object"),
        .init("[,1]", .reject(.syntax), "leading comma"),
        .init("[1,,2]", .reject(.syntax), "double comma"),
        // Numbers.
        .init("[01]", .reject(.syntax), "leading zero"),
        .init("[-01]", .reject(.syntax), "leading zero after minus"),
        .init("[00]", .reject(.syntax), "two zeros"),
        .init("[0]", .accept, "zero"),
        .init("[-0]", .accept, "negative zero"),
        .init("[0.0e-0]", .accept, "zero with fraction and exponent"),
        .init("[1.]", .reject(.syntax), "no digit after the decimal point"),
        .init("[.5]", .reject(.syntax), "no digit before the decimal point"),
        .init("[1e]", .reject(.syntax), "no exponent digits"),
        .init("[1e+]", .reject(.syntax), "no exponent digits after the sign"),
        .init("[+1]", .reject(.syntax), "leading plus"),
        .init("[-]", .reject(.syntax), "a lone minus"),
        .init("[0x10]", .reject(.syntax), "hexadecimal"),
        .init("[NaN]", .reject(.syntax), "NaN is not JSON"),
        .init("[Infinity]", .reject(.syntax), "Infinity is not JSON"),
        .init("[-Infinity]", .reject(.syntax), "-Infinity is not JSON"),
        .init("12", .accept, "a number alone, completed only by the end of input"),
        // Literals and quotes.
        .init("['x']", .reject(.syntax), "single quotes"),
        .init("{'a':1}", .reject(.syntax), "single-quoted key"),
        .init("{a:1}", .reject(.syntax), "unquoted key"),
        .init("{1:1}", .reject(.syntax), "number as key"),
        .init("[tru]", .reject(.syntax), "truncated literal"),
        .init("[True]", .reject(.syntax), "literals are lower case"),
        .init("nul", .reject(.syntax), "truncated null at the end"),
        .init("tru", .reject(.syntax), "truncated true at the end"),
        .init("[undefined]", .reject(.syntax), "undefined is not JSON"),
        // Structure.
        .init("[", .reject(.truncated), "unclosed array"),
        .init("{", .reject(.truncated), "unclosed object"),
        .init(#"{"a":"#, .reject(.truncated), "object without the value"),
        .init(#"{"a""#, .reject(.truncated), "object without the colon"),
        .init(#"["abc"#, .reject(.truncated), "unclosed string"),
        .init("[1}", .reject(.syntax), "mismatched brackets"),
        .init(#"{"a":1]"#, .reject(.syntax), "mismatched braces"),
        .init("]", .reject(.syntax), "closing bracket first"),
        .init(#"{"a" 1}"#, .reject(.syntax), "missing colon"),
        .init(#"{"a"::1}"#, .reject(.syntax), "double colon"),
        .init("[1 2]", .reject(.syntax), "missing comma in an array"),
        .init(#"{"a":1 "b":2}"#, .reject(.syntax), "missing comma in an object"),
        .init("/* c */ [1]", .reject(.syntax), "comments need allowComments"),
        .init("[1] // c", .reject(.syntax), "line comments need allowComments"),
        // Valid odds and ends.
        .init(#""""#, .accept, "the empty string"),
        .init(#"{"":""}"#, .accept, "empty key and value"),
        .init(#"{"a":1,"a":2}"#, .accept, "duplicate keys are allowed by RFC 8259"),
        .init(#"[[],{},[{}],{"a":[]}]"#, .accept, "empty containers"),
    ]

    @Test(arguments: strictCases)
    func strictMode(_ c: ConformanceCase) {
        check(c)
    }

    static let optionCases: [ConformanceCase] = {
        let comments = JSONParserOptions(allowComments: true)
        let multiple = JSONParserOptions(allowMultipleValues: true)
        let both = JSONParserOptions(allowComments: true, allowMultipleValues: true)
        let lenient = JSONParserOptions(replaceInvalidUTF8: true)
        return [
            .init("/* c */ [1, // line\n 2] /* end */", .accept, "block and line comments", options: comments),
            .init("[1, /* a */ 2 /**/, /***/ 3]", .accept, "comments between tokens", options: comments),
            .init("[1] // to the end", .accept, "a line comment may end the input", options: comments),
            .init(#"["/* not a comment */"]"#, .accept, "comment markers inside a string", options: comments),
            .init("[1] /* open", .reject(.truncated), "unterminated block comment", options: comments),
            .init("[1] /", .reject(.truncated), "a lone slash at the end", options: comments),
            .init("[1 /x 2]", .reject(.syntax), "slash without * or /", options: comments),
            .init("/* only */", .reject(.truncated), "a comment is not a value", options: comments),
            .init("{\"a\":1}\n{\"a\":2}\n", .accept, "JSON Lines", options: multiple),
            .init("[1][2]{\"a\":3}\"x\"null", .accept, "concatenated values", options: multiple),
            .init("1 2 3", .accept, "numbers separated by whitespace", options: multiple),
            .init("", .accept, "empty input is no values", options: multiple),
            .init(" \n\t\r\n", .accept, "whitespace only is no values", options: multiple),
            .init("/* c */ // d", .accept, "comments only, with both options", options: both),
            .init("[1] \"abc", .reject(.truncated), "a value that ends inside a string", options: multiple),
            .init("[1] [", .reject(.truncated), "an unclosed second value", options: multiple),
            .init("[1] ]", .reject(.syntax), "a stray bracket between values", options: multiple),
            .init("[1,\u{0C}2]", .reject(.syntax), "options do not relax form feed", options: both),
            .init(bytes: rawBytes(#"["\xC0\xAF"]"#), .accept, "lenient UTF-8 repairs overlongs", options: lenient),
            .init(bytes: rawBytes(#"["\xED\xA0\x80"]"#), .accept, "lenient UTF-8 repairs surrogates", options: lenient),
            .init(bytes: rawBytes(#"{"\xFF":1}"#), .accept, "lenient UTF-8 repairs keys", options: lenient),
            .init(
                #"["\ud800"]"#, .reject(.invalidUTF8), "a lone \\u surrogate is not UTF-8: still an error",
                options: lenient),
            .init(bytes: rawBytes(#"[\xC3\xA9]"#), .reject(.syntax), "non-ASCII outside strings", options: lenient),
            .init(bytes: rawBytes(#"\xEF\xBB\xBF[]"#), .reject(.syntax), "BOM even when lenient", options: lenient),
        ]
    }()

    @Test(arguments: optionCases)
    func optionalRelaxations(_ c: ConformanceCase) {
        check(c)
    }

    private func check(_ c: ConformanceCase, sourceLocation: SourceLocation = #_sourceLocation) {
        let (outcome, differences) = parseAllChunkings(c.input, options: c.options)
        #expect(differences.isEmpty, "\(c.reason): \(differences)", sourceLocation: sourceLocation)
        switch c.verdict {
        case .accept:
            #expect(outcome.error == nil, "\(c.reason): \(outcome)", sourceLocation: sourceLocation)
        case .reject(let code):
            #expect(outcome.error?.code == code, "\(c.reason): \(outcome)", sourceLocation: sourceLocation)
            #expect(outcome.error?.location != nil, "\(c.reason)", sourceLocation: sourceLocation)
        }
    }

    @Test func lenientUTF8ReplacesEachBadSequenceWithU_FFFD() throws {
        let options = JSONParserOptions(replaceInvalidUTF8: true)
        // Replacement follows Unicode's "maximal subpart" practice, as Swift's decoder does.
        let cases: [(String, String)] = [
            (#"["a\xC0\xAFb"]"#, "a\u{FFFD}\u{FFFD}b"),
            (#"["\xE2\x82"]"#, "\u{FFFD}"),
            (#"["x\xED\xA0\x80y"]"#, "x\u{FFFD}\u{FFFD}\u{FFFD}y"),
            (#"["\xF4\x90\x80\x80"]"#, "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}"),
            (#"["ok é\x80"]"#, "ok é\u{FFFD}"),
            (#"["valid ☃"]"#, "valid ☃"),
        ]
        for (input, expected) in cases {
            for size in chunkings {
                let outcome = parse(rawBytes(input), chunkSize: size, options: options)
                #expect(
                    outcome.events == [.beginArray, .string(expected), .endArray],
                    "\(input) chunk \(String(describing: size))")
            }
        }
        let keyed = parse(rawBytes(#"{"k\xFF":"v"}"#), chunkSize: 1, options: options)
        #expect(keyed.events == [.beginObject, .key("k\u{FFFD}"), .string("v"), .endObject])
    }

    @Test func multipleValuesArriveInOrder() throws {
        let options = JSONParserOptions(allowMultipleValues: true)
        let lines = "{\"id\":1}\n{\"id\":2}\n[3]\n\"four\"\n5\n"
        for size in chunkings {
            let builder = JSONValueBuilder()
            try JSONStreamParser.parse(lines.bytes, handler: builder, options: options, chunkSize: size)
            #expect(builder.values == [["id": 1], ["id": 2], [3], "four", 5])
        }
        let builder = JSONValueBuilder()
        try JSONStreamParser.parse("12 3".bytes, handler: builder, options: options)
        #expect(builder.values == [12, 3], "whitespace separates numbers; digits together are one number")
    }
}
