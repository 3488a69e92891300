import FlatlandJSON
import Testing

/// The writer escapes what RFC 8259 requires, and parse -> write -> parse is the identity.
@Suite struct WriterTests {
    private func written(_ body: (inout JSONWriter) -> Void, pretty: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty)
        body(&writer)
        return writer.string
    }

    @Test func escapesQuotesAndBackslash() {
        #expect(written { $0.string(#"a"b\c/d"#) } == #""a\"b\\c/d""#)
    }

    @Test(arguments: 0..<32)
    func escapesEveryControlCharacter(_ code: Int) throws {
        let scalar = try #require(Unicode.Scalar(code))
        let short: [Int: String] = [0x08: #"\b"#, 0x09: #"\t"#, 0x0A: #"\n"#, 0x0C: #"\f"#, 0x0D: #"\r"#]
        let hex = String(code, radix: 16)
        let expected = short[code] ?? #"\u00"# + (hex.count == 1 ? "0" + hex : hex)
        let out = written { $0.string("x\(Character(scalar))y") }
        #expect(out == "\"x\(expected)y\"")
        // And it reads back as the same character.
        #expect(try JSONValue(parsing: out) == .string("x\(Character(scalar))y"))
    }

    @Test func keepsNonASCIIAsUTF8() {
        let text = "é☃😀 中文 \u{7F} \u{2028}"
        let out = written { $0.string(text) }
        #expect(Array(out.utf8) == [UInt8(ascii: "\"")] + Array(text.utf8) + [UInt8(ascii: "\"")])
    }

    @Test func escapesKeysToo() {
        #expect(
            written {
                $0.beginObject()
                $0.key("a\"\n")
                $0.null()
                $0.endObject()
            } == #"{"a\"\n":null}"#)
    }

    @Test func compactStructure() {
        let out = written { w in
            w.beginObject()
            w.key("name")
            w.string("Ada")
            w.key("age")
            w.number(36)
            w.key("ratio")
            w.number(0.25)
            w.key("nan")
            w.number(Double.nan)
            w.key("list")
            w.beginArray()
            w.bool(true)
            w.bool(false)
            w.null()
            w.beginArray()
            w.endArray()
            w.beginObject()
            w.endObject()
            w.endArray()
            w.endObject()
        }
        #expect(out == #"{"name":"Ada","age":36,"ratio":0.25,"nan":null,"list":[true,false,null,[],{}]}"#)
    }

    @Test func prettyMode() {
        let value: JSONValue = ["name": "Ada", "tags": ["a", 1], "empty": [], "none": [:], "nested": ["k": nil]]
        let expected = """
            {
              "name": "Ada",
              "tags": [
                "a",
                1
              ],
              "empty": [],
              "none": {},
              "nested": {
                "k": null
              }
            }
            """
        #expect(value.jsonString(pretty: true) == expected)
        #expect(JSONValue.array([]).jsonString(pretty: true) == "[]")
        #expect(JSONValue.number(7).jsonString(pretty: true) == "7")
    }

    @Test func resetKeepsNothing() {
        var writer = JSONWriter()
        writer.beginArray()
        writer.number(1)
        writer.reset()
        writer.string("x")
        #expect(writer.string == #""x""#)
    }

    static let roundTripCorpus: [String] = [
        #"{"b":1,"a":2,"b":3}"#,
        #"[1,1.0,1e2,1E+2,-0,0.1,1e400,1e-400,10765432100123456789,-9223372036854775808]"#,
        #"{"text":"\" \\ \/ \b \f \n \r \t \u0000 \u001f é ☃ 😀 \ud83d\ude00","":""}"#,
        #"[[],{},[[]],{"a":{}},null,true,false,"x"]"#,
        #"{"offset":12,"count":2,"total":47,"data":[{"uuid":"u-lQ7tSlU4A9OmDjIefiOEMG5Dsy02Yt3q","age":36}]}"#,
        String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
        #""top-level string""#, "12345678901234567890123456789", "true", "null",
    ]

    @Test(arguments: roundTripCorpus)
    func parseWriteParseIsTheIdentity(_ text: String) throws {
        let value = try JSONValue(parsing: text)
        for pretty in [false, true] {
            let again = try JSONValue(parsing: value.jsonString(pretty: pretty))
            #expect(again == value)
        }
        // Key order, duplicate keys and exact number text survive.
        if case .object(let object) = value, text.hasPrefix(#"{"b":1"#) {
            #expect(object.keys == ["b", "a", "b"])
            #expect(value["b"] == 3, "lookup finds the last duplicate")
        }
    }

    @Test func compactOutputOfCompactInputIsByteIdentical() throws {
        let text = #"{"b":1,"a":[1.0,1e2,-0,"é☃"],"b":{"c":null,"d":false}}"#
        #expect(try JSONValue(parsing: text).jsonString() == text)
        #expect(try JSONValue(parsing: text).jsonBytes == Array(text.utf8))
    }

    /// Random values from a seeded generator: every one survives write and parse, compact and
    /// pretty, whole and in small chunks.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomValuesRoundTrip(_ seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        for _ in 0..<150 {
            let value = randomValue(&random, depth: 0)
            for pretty in [false, true] {
                let bytes = Array(value.jsonString(pretty: pretty).utf8)
                #expect(try JSONValue(parsing: bytes) == value)
                let builder = JSONValueBuilder()
                try JSONStreamParser.parse(bytes, handler: builder, chunkSize: Int(random.next() % 9) + 1)
                #expect(builder.values == [value])
            }
        }
    }

    private func randomValue(_ random: inout SeededGenerator, depth: Int) -> JSONValue {
        let pick = random.next() % (depth > 6 ? 4 : 6)
        switch pick {
        case 0: return .null
        case 1: return .bool(random.next() % 2 == 0)
        case 2: return .number(randomNumber(&random))
        case 3: return .string(randomString(&random))
        case 4: return .array((0..<Int(random.next() % 5)).map { _ in randomValue(&random, depth: depth + 1) })
        default:
            var object = JSONObject()
            for _ in 0..<Int(random.next() % 5) {
                // Few distinct keys, so that duplicates happen.
                let key = random.next() % 3 == 0 ? "dup" : randomString(&random)
                object.members.append((key: key, value: randomValue(&random, depth: depth + 1)))
            }
            return .object(object)
        }
    }

    private func randomNumber(_ random: inout SeededGenerator) -> JSONNumber {
        switch random.next() % 4 {
        case 0: return JSONNumber(Int64(bitPattern: random.next()))
        case 1: return JSONNumber(random.next())
        case 2:
            let d = Double(bitPattern: random.next())
            return JSONNumber(d) ?? JSONNumber(0)
        default:
            // Any valid shape, with its exact text.
            var text = random.next() % 2 == 0 ? "-" : ""
            text += random.next() % 4 == 0 ? "0" : String(random.next() % 1_000_000 + 1)
            if random.next() % 2 == 0 { text += "." + String(random.next() % 10_000) }
            if random.next() % 2 == 0 {
                text += ["e", "E", "e+", "e-", "E-"][Int(random.next() % 5)] + String(random.next() % 400)
            }
            return JSONNumber(text) ?? JSONNumber(0)
        }
    }

    private func randomString(_ random: inout SeededGenerator) -> String {
        let pieces = [
            "a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "☃", "😀", "中", "\u{FFFD}",
            "\u{10FFFF}",
        ]
        return String(
            (0..<Int(random.next() % 8)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined())
    }
}

/// Values, the builder and the small conveniences around them.
@Suite struct ValueTests {
    @Test func subscriptsAndAccessors() throws {
        let v = try JSONValue(parsing: #"{"a":[1,"x",true,null],"a":{"b":2.5}}"#)
        #expect(v["a"]?["b"]?.numberValue?.text == "2.5")
        if case .object(let object) = v {
            #expect(object.count == 2)
            #expect(object.members[0].value[1]?.stringValue == "x")
            #expect(object.members[0].value[2]?.boolValue == true)
            #expect(object.members[0].value[3]?.isNull == true)
            #expect(object.members[0].value[4] == nil)
        } else {
            Issue.record("not an object: \(v)")
        }
        #expect(v.typeName == "object")
        #expect(v[0] == nil)
    }

    @Test func objectSubscriptSetter() {
        var object: JSONObject = ["a": 1, "b": 2, "a": 3]
        object["a"] = 4
        #expect(object.members.map(\.key) == ["a", "b", "a"])
        #expect(object.members.map(\.value) == [1, 2, 4])
        object["c"] = 5
        #expect(object.keys == ["a", "b", "a", "c"])
        object["a"] = nil
        #expect(object.keys == ["b", "c"])
    }

    @Test func bytesCompareWithoutCopying() {
        let text: [UInt8] = Array("identifier_with_a_long_name".utf8)
        text.withUnsafeBytes { buffer in
            let bytes = JSONBytes(unsafeBuffer: buffer)
            #expect(bytes.equals("identifier_with_a_long_name" as StaticString))
            #expect(!bytes.equals("identifier_with_a_long_namf" as StaticString))
            #expect(bytes == "identifier_with_a_long_name")
            #expect(!bytes.equals("short"))
            #expect(bytes.count == 27)
        }
    }

    @Test func parsingEmptyInputThrows() {
        #expect(throws: JSONError.self) { try JSONValue(parsing: "") }
        #expect(throws: JSONError.self) {
            try JSONValue(parsing: "", options: JSONParserOptions(allowMultipleValues: true))
        }
    }
}
