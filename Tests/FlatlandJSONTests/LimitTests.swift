import FlatlandJSON
import Testing

/// Limits hold whatever the chunking, with the right code and the same location.
@Suite struct LimitTests {
    private func check(
        _ bytes: [UInt8], _ limits: JSONLimits, code: JSONError.Code?, at offset: Int? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let (outcome, differences) = parseAllChunkings(bytes, options: JSONParserOptions(limits: limits))
        #expect(differences.isEmpty, "\(differences)", sourceLocation: sourceLocation)
        #expect(outcome.error?.code == code, "\(outcome)", sourceLocation: sourceLocation)
        if let offset {
            #expect(outcome.error?.location?.offset == offset, "\(outcome)", sourceLocation: sourceLocation)
        }
    }

    @Test func defaultDepthIs512() {
        #expect(JSONLimits.default.maxDepth == 512)
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        check(ok.bytes, .default, code: nil)
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        check(deep.bytes, .default, code: .depth, at: 512)
        let objects = String(repeating: #"{"a":"#, count: 513) + "1" + String(repeating: "}", count: 513)
        check(objects.bytes, .default, code: .depth, at: 512 * 5)
    }

    @Test(arguments: [1, 7, nil] as [Int?])
    func hundredThousandOpenBracketsIsADepthErrorNotACrash(_ chunkSize: Int?) throws {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        let outcome = parse(bytes, chunkSize: chunkSize)
        let error = try #require(outcome.error)
        #expect(error.code == .depth)
        #expect(error.location == JSONLocation(offset: 512, line: 1, column: 513))
        #expect(outcome.events.count == 512)
    }

    @Test func customDepth() {
        let limits = JSONLimits(maxDepth: 3)
        check("[[[1]]]".bytes, limits, code: nil)
        check("[[[[1]]]]".bytes, limits, code: .depth, at: 3)
        check(#"{"a":{"b":[{}]}}"#.bytes, limits, code: .depth, at: 11)
        check(#"[[["[[[[", {"k":"]]]]"}]]]"#.bytes, JSONLimits(maxDepth: 4), code: nil)
    }

    /// A bracket past the depth limit that is itself out of place is a syntax error, in any
    /// chunking: libyajl would never open its level. (Found by the ingest fuzzer: read whole, by
    /// the fast path, it was the syntax error; read in small chunks, the states stopped at the
    /// bracket before libyajl read it, and said the nesting was too deep.)
    @Test func aBracketPastTheDepthLimitThatIsOutOfPlaceIsASyntaxError() {
        let limits = JSONLimits(maxDepth: 6)
        // Long enough for the fast path (128 bytes) when read whole.
        let padding = String(repeating: " ", count: 140)
        let misplaced = #"{"a":{"b":{"c":{"d":"e","f":[{"g":"h"{"i":1}}]}}}}"# + padding
        check(misplaced.bytes, limits, code: .syntax, at: 37)
        check(("[[[[[[1[]]]]]]]" + padding).bytes, limits, code: .syntax, at: 7)
        // In place, the same bracket is the depth error.
        let inPlace = #"{"a":{"b":{"c":{"d":"e","f":[{"g":"h","x":{"i":1}}]}}}}"# + padding
        check(inPlace.bytes, limits, code: .depth, at: 42)
        check(("[[[[[[1,[]]]]]]]" + padding).bytes, limits, code: .depth, at: 8)
    }

    @Test func stringLength() {
        let limits = JSONLimits(maxStringLength: 8)
        check(#"["12345678"]"#.bytes, limits, code: nil)
        check(#"["123456789"]"#.bytes, limits, code: .limit, at: 10)
        check(#"["\n\n\n\n"]"#.bytes, limits, code: nil)
        check(#"["\n\n\n\n\n"]"#.bytes, limits, code: .limit, at: 10)
        check(#"["éé€"]"#.bytes, limits, code: nil)
        check(#"["ééé€"]"#.bytes, limits, code: .limit, at: 10)
        let long = "[\"" + String(repeating: "x", count: 10_000) + "\"]"
        check(long.bytes, limits, code: .limit, at: 10)
        check(long.bytes, .default, code: nil)
    }

    /// Limits of `Int.max` mean "no limit": the offsets the scanner adds to them must not
    /// overflow (they trapped before).
    @Test func limitsOfIntMaxMeanNoLimit() {
        let unlimited = JSONLimits(
            maxDepth: .max, maxStringLength: .max, maxKeyLength: .max, maxNumberLength: .max, maxTotalBytes: .max)
        let long = String(repeating: "x", count: 300)
        check(#"{"\#(long)":["\#(long)", "a\n\u00e9", 12345678901234567890, [[{}]]]}"#.bytes, unlimited, code: nil)
        check(#"["unterminated"#.bytes, unlimited, code: .truncated)
        var mixed = unlimited
        mixed.maxStringLength = 8
        check(#"["123456789"]"#.bytes, mixed, code: .limit, at: 10)
    }

    @Test func keyLength() {
        let limits = JSONLimits(maxKeyLength: 4)
        check(#"{"abcd":"a long string value"}"#.bytes, limits, code: nil)
        check(#"{"abcde":1}"#.bytes, limits, code: .limit, at: 6)
        check(#"{"a":1,"bcdefg":2}"#.bytes, limits, code: .limit, at: 12)
        check(#"[{"a":{"xyzzy":1}}]"#.bytes, limits, code: .limit, at: 12)
        check(#"["abcdefgh", {"k":["long value"]}]"#.bytes, limits, code: nil)
    }

    @Test func numberLength() {
        let limits = JSONLimits(maxNumberLength: 10)
        check("[1234567890]".bytes, limits, code: nil)
        check("[-123456789]".bytes, limits, code: nil)
        check("[12345678901]".bytes, limits, code: .limit, at: 11)
        check("[1.23456789e1]".bytes, limits, code: .limit, at: 11)
        check("12345678901".bytes, limits, code: .limit, at: 10)
        check("[1, 123456789012345]".bytes, limits, code: .limit, at: 14)
        // A number spanning many chunks: the same error in 1-byte chunks as whole.
        let huge = "[" + String(repeating: "7", count: 5000) + "]"
        check(huge.bytes, limits, code: .limit, at: 11)
        check(huge.bytes, .default, code: .limit, at: 1 + 1024)
        let max = "[" + String(repeating: "7", count: 1024) + "]"
        check(max.bytes, .default, code: nil)
        // Digits in strings are not numbers.
        check(#"["12345678901234567890"]"#.bytes, limits, code: nil)
    }

    @Test func numberLimitDoesNotHideASyntaxError() {
        // Whichever comes first in the text wins, in every chunking.
        let limits = JSONLimits(maxNumberLength: 5)
        check("[1 2345678]".bytes, limits, code: .limit, at: 8)
        check("[12 3]".bytes, limits, code: .syntax, at: 4)
    }

    @Test func totalBytes() {
        let limits = JSONLimits(maxTotalBytes: 10)
        check("[1,2,3,4]".bytes, limits, code: nil)
        check("[1,2,3,45]".bytes, limits, code: nil)
        check("[1,2,3,4,5]".bytes, limits, code: .limit, at: 10)
        check("[1,2,3,4,5,6,7,8]".bytes, limits, code: .limit, at: 10)
        check("[1,2 3,4,5,6,7,8]".bytes, limits, code: .syntax, at: 5)
    }
}
