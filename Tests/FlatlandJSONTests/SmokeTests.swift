import Testing

@testable import FlatlandJSON

@Suite struct SmokeTests {
    @Test func parsesValue() throws {
        let v = try JSONValue(parsing: #"{"a":[1,2.5,"x\u00e9\ud83d\ude00",true,null],"b":{"c":12345678901234567890}}"#)
        #expect(v["a"]?[2]?.stringValue == "xé😀")
        #expect(v["b"]?["c"]?.numberValue?.text == "12345678901234567890")
        #expect(try JSONValue(parsing: v.jsonString()) == v)
    }

    @Test(arguments: [
        #"[1,]"#, "", " ", "[1", "\u{FEFF}[]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[1]\u{0C}", "[01]", "{\"a\" 1}",
        "trux", "[NaN]", "\"\u{01}\"",
    ])
    func rejects(_ text: String) throws {
        for chunk in [1, 2, 3, 1000] {
            do {
                try JSONStreamParser.parse(Array(text.utf8), handler: JSONValueBuilder(), chunkSize: chunk)
                Issue.record("accepted \(text)")
            } catch {
                print(chunk, text.debugDescription, error, error.code, error.excerpt.debugDescription)
            }
        }
    }
}
