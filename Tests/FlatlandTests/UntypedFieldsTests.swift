import Flatland
import FlatlandJSON
import Testing

/// Untyped records keep their members as the ingest read them and build `JSONValue`s only when
/// read (issue 25, the untyped path): what a reader sees must be exactly what setting each member
/// as it arrived gave before, on every backend, through merges within and across responses.
@Suite("Untyped fields")
struct UntypedFieldsTests {
    static let everyKind = #"""
        {"uuid":"x-1","s":"a\"b\\c\n\u00e9 and more than fifteen bytes","short":"hi","n":-1.50e3,
         "big":123456789012345678901234567890,"t":true,"f":false,"z":null,
         "arr":[1,"two",[3,[]],{"k":"v"},{}],"obj":{"a":{"b":[]},"c":"d"},"esc":{"$ref":"literal"},
         "esc2":{"$$ref":"x"},"notref":{"$ref":"r","other":1},"child":{"uuid":"y-1","v":1},
         "kids":[{"uuid":"y-2"},{"uuid":"y-3","w":[true]}]}
        """#

    @Test(arguments: StoreBackend.allCases) func everyKindOfValueReadsBackInArrivalOrder(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(bytes(Self.everyKind))
        let record = try #require(store.record(id: "x-1"))
        let keys = ["s", "short", "n", "big", "t", "f", "z", "arr", "obj", "esc", "esc2", "notref", "child", "kids"]
        #expect(record.presentFields == keys)
        #expect(record.fields.keys == keys)
        let expected = try JSONValue(
            parsing: #"""
                {"s":"a\"b\\c\n\u00e9 and more than fifteen bytes","short":"hi","n":-1.50e3,
                 "big":123456789012345678901234567890,"t":true,"f":false,"z":null,
                 "arr":[1,"two",[3,[]],{"k":"v"},{}],"obj":{"a":{"b":[]},"c":"d"},"esc":{"$$ref":"literal"},
                 "esc2":{"$$$ref":"x"},"notref":{"$ref":"r","other":1},"child":{"$ref":"y-1"},
                 "kids":[{"$ref":"y-2"},{"$ref":"y-3"}]}
                """#)
        #expect(.object(record.fields) == expected)
        #expect(record.fields["big"]?.numberValue?.text == "123456789012345678901234567890")
        guard case .untyped(let payload) = record.payload else {
            Issue.record("not an untyped payload")
            return
        }
        #expect(payload == record.fields)
        #expect(store.record(id: "y-3")?.fields == ["w": [true]])
        // Written as JSON, the fields are the same object.
        var writer = JSONWriter()
        writer.beginObject()
        record.writeFields(to: &writer)
        writer.endObject()
        #expect(try JSONValue(parsing: writer.bytes) == expected)
    }

    /// A key repeated in one object keeps its first place and its last value, as setting each
    /// member in turn did.
    @Test(arguments: StoreBackend.allCases) func aRepeatedKeyKeepsItsPlaceAndItsLastValue(backend: StoreBackend) throws
    {
        let store = try backend.store()
        try store.ingest(bytes(#"{"uuid":"x-1","a":1,"b":{"c":2},"a":{"d":[3]},"b":"last"}"#))
        let fields = try #require(store.record(id: "x-1")).fields
        #expect(fields.keys == ["a", "b"])
        #expect(fields == ["a": ["d": [3]], "b": "last"])
    }

    /// More members than `JSONObject` searches without an index, one of them repeated.
    @Test func manyMembers() throws {
        let store = Store()
        let members = (0..<40).map { #""m\#($0)":\#($0)"# }.joined(separator: ",")
        try store.ingest(bytes(#"{"uuid":"x-1",\#(members),"m7":"seven","m39":[39]}"#))
        let fields = try #require(store.record(id: "x-1")).fields
        #expect(fields.count == 40)
        #expect(fields.keys == (0..<40).map { "m\($0)" })
        #expect(fields["m7"] == "seven")
        #expect(fields["m39"] == [39])
        #expect(fields["m8"] == 8)
    }

    /// The same entity twice in one response: the later object's members win, the earlier
    /// one's others stay, in the order they first arrived.
    @Test(arguments: StoreBackend.allCases) func twiceInOneResponse(backend: StoreBackend) throws {
        let store = try backend.store()
        let result = try store.ingest(
            bytes(#"[{"uuid":"x-1","a":1,"b":{"c":[1]}},{"uuid":"x-2"},{"uuid":"x-1","b":2,"d":"e","a":1}]"#))
        #expect(result.changes.inserted.sorted() == ["x-1", "x-2"])
        let fields = try #require(store.record(id: "x-1")).fields
        #expect(fields.keys == ["a", "b", "d"])
        #expect(fields == ["a": 1, "b": 2, "d": "e"])
        #expect(store.record(id: "x-2")?.fields == [:])
    }

    /// A later response merges into the stored record and reports the keys whose values changed.
    @Test(arguments: StoreBackend.allCases) func aLaterResponseMergesAndReportsTheChangedKeys(backend: StoreBackend)
        throws
    {
        let store = try backend.store()
        try store.ingest(bytes(#"{"uuid":"x-1","a":1,"b":"x","n":{"m":[1,2]}}"#))
        let unchanged = try store.ingest(bytes(#"{"uuid":"x-1","n":{"m":[1,2]},"a":1}"#))
        #expect(unchanged.changes.updated.isEmpty)
        let result = try store.ingest(bytes(#"{"uuid":"x-1","b":"y","a":1,"c":null,"n":{"m":[1,3]}}"#))
        #expect(result.changes.updated == [ChangeSet.Update(id: "x-1", fields: ["b", "c", "n"])])
        let fields = try #require(store.record(id: "x-1")).fields
        #expect(fields.keys == ["a", "b", "n", "c"])
        #expect(fields == ["a": 1, "b": "y", "n": ["m": [1, 3]], "c": nil])
    }

    /// Documents whose members the readers that skip building values must read exactly as the
    /// built object: every kind of value, a repeated key, more members than they compare key by
    /// key, escapes, and one-member objects that look like references.
    static let readAlone = [
        everyKind,
        #"{"uuid":"x-1","a":1,"b":{"c":2},"a":{"d":[3]},"b":"last"}"#,
        "{\"uuid\":\"x-1\"," + (0..<40).map { #""m\#($0)":[\#($0)]"# }.joined(separator: ",") + "}",
        "{\"uuid\":\"x-1\"," + (0..<40).map { #""m\#($0 % 35)":\#($0)"# }.joined(separator: ",") + "}",
        #"{"uuid":"x-1","k\"\u0001é":"\ud83d\ude00\t","$ref":"top","o":{"$$$ref":{"$ref":"in"}},"e":{},"a":[]}"#,
        #"{"uuid":"x-1","n":[0,-0,1E+2,1.0e-7,-12.50],"x":{"$ref":"a","$ref":"b"},"y":[{"$ref":1}]}"#,
    ]

    /// A condition reads one field alone (`untypedField`), and a record's fields are written
    /// and listed without building them: each must be exactly what the built object gives, byte
    /// for byte when written.
    @Test(arguments: StoreBackend.each(readAlone)) func oneFieldAndTheWrittenFieldsAreTheObjects(
        backend: StoreBackend, document: String
    ) throws {
        let mismatches = Box<[String]>([])
        let hooks = StoreHooks(condition: { incoming in
            guard incoming.isUntyped, let fields = incoming.untypedFields else { return true }
            if incoming.presentFields != fields.keys { mismatches.withValue { $0.append("\(incoming.id) keys") } }
            for key in fields.keys + ["absent", "$ref", ""] where incoming.untypedField(key) != fields[key] {
                mismatches.withValue { $0.append("\(incoming.id).\(key)") }
            }
            return true
        })
        let store = try backend.store(hooks: hooks)
        try store.ingest(bytes(document))
        #expect(mismatches.current.isEmpty)
        for id in store.allIDs() {
            let record = try #require(store.record(id: id))
            var written = JSONWriter()
            written.beginObject()
            record.writeFields(to: &written)
            written.endObject()
            #expect(written.string == JSONValue.object(record.fields).jsonString(), "\(id)")
            #expect(record.presentFields == record.fields.keys, "\(id)")
        }
    }

    /// A typed entity is not untyped: it has no one field to read alone.
    @Test func aTypedEntityHasNoUntypedField() throws {
        let seen = Box<[String]>([])
        let hooks = StoreHooks(condition: { incoming in
            seen.withValue { $0.append("\(incoming.id) \(incoming.isUntyped) \(incoming.untypedField("age") == nil)") }
            return true
        })
        let store = Store(registry: try seedRegistry(), hooks: hooks)
        try store.ingest(bytes(#"[{"uuid":"u-1","age":3},{"uuid":"x-1","age":4}]"#))
        #expect(seen.current == ["u-1 false true", "x-1 true false"])
    }
}
