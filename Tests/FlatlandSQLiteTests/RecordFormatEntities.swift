import Flatland
import FlatlandJSON
import Foundation

/// A nested value struct, for the record format's round trips.
struct Place: FieldRecord, Equatable {
    var city = ""
    var zip: String?
    init() {}
    init(city: String, zip: String?) {
        self.city = city
        self.zip = zip
    }
    static let fields: [Field<Place>] = [Field("city", \.city), Field("zip", \.zip)]
}

/// A raw-value enum field.
enum Mood: String, FieldValue {
    case calm, loud
}

/// An entity with a field of every type Flatland provides a conformance for, for the record
/// format's round trips (and the fixture written by the format before it: `Fixtures/README.md`).
struct Sample: Entity, Equatable {
    static let prefix = "sm"
    static let dataVersionKey: String? = "version"
    static let indexes: [EntityIndex<Sample>] = [EntityIndex("text", \.text)]
    var id: EntityID<Sample>
    var text = ""
    var flag = false
    var int = 0
    var int64: Int64 = 0
    var int32: Int32 = 0
    var int16: Int16 = 0
    var int8: Int8 = 0
    var uint: UInt = 0
    var uint64: UInt64 = 0
    var uint32: UInt32 = 0
    var uint16: UInt16 = 0
    var uint8: UInt8 = 0
    var double = 0.0
    var float: Float = 0
    var decimal: Decimal = 0
    var url: URL?
    var date: Date?
    var json: JSONValue = .null
    var number = JSONNumber(0)
    var optional: String?
    var list: [Int] = []
    var nested: [[String?]] = []
    var mood: Mood?
    var friend: EntityID<Sample>?
    var friends: [EntityID<Sample>] = []
    var place = Place()
    var version = 0

    init(id: EntityID<Sample>) { self.id = id }

    static let fields: [Field<Sample>] = [
        Field("text", \.text), Field("flag", \.flag), Field("int", \.int), Field("int64", \.int64),
        Field("int32", \.int32), Field("int16", \.int16), Field("int8", \.int8), Field("uint", \.uint),
        Field("uint64", \.uint64), Field("uint32", \.uint32), Field("uint16", \.uint16), Field("uint8", \.uint8),
        Field("double", \.double), Field("float", \.float), Field("decimal", \.decimal), Field("url", \.url),
        Field("date", \.date), Field("json", \.json), Field("number", \.number), Field("optional", \.optional),
        Field("list", \.list), Field("nested", \.nested), Field("mood", \.mood), Field("friend", \.friend),
        Field("friends", \.friends), Field("place", \.place), Field("version", \.version),
    ]
}

/// The registry of the record format's tests.
func sampleRegistry() throws -> EntityRegistry { try EntityRegistry([Sample.self]) }

/// A response of `count` samples (ids `sm-0`…), every field given, with edge values: the text
/// of each holds a NUL, quotes, a backslash, control characters and non-ASCII letters, and the
/// numbers reach their types' limits. One more record is untyped (`note-…`), one has a NUL in
/// its id.
func sampleResponse(count: Int, version: Int = 1) -> [UInt8] {
    var items: [String] = []
    for i in 0..<count {
        let text = #"t\u0000\"q\" \\ \n\t é 漢 🙂 \#(i)"#
        items.append(
            #"""
            {"uuid":"sm-\#(i)","text":"\#(text)","flag":\#(i % 2 == 0),"int":\#(i == 0 ? Int.min : i * 1_000_003),
            "int64":\#(Int64.max - Int64(i)),"int32":\#(Int32.min + Int32(i)),"int16":\#(-(i % 32768)),"int8":\#(Int8.max),
            "uint":\#(UInt.max - UInt(i)),"uint64":\#(UInt64.max),"uint32":\#(UInt32.max),"uint16":\#(UInt16.max),
            "uint8":\#(i % 256),"double":\#(Double(i) * 0.1 + 1e-300),"float":1.5,"decimal":12345678901234567890.123456789,
            "url":"https://example.com/a?b=\#(i)&c=%20","date":"2026-11-28T07:3\#(i % 10):01.123Z",
            "json":{"a":[1,"x",null,true,{"$ref":"y"}],"b":{"c":-0.5e-7}},"number":123456789012345678901234567890,
            "optional":\#(i % 3 == 0 ? "null" : "\"o\(i)\""),"list":[\#(i),-1,0],"nested":[["a",null],[]],
            "mood":"\#(i % 2 == 0 ? "calm" : "loud")","friend":"sm-\#((i + 1) % count)","friends":["sm-0","sm-\#(i)"],
            "place":{"city":"Zürich \#(i)","zip":null},"version":\#(version)}
            """#)
    }
    items.append(#"{"uuid":"note-1","body":"untyped \u0000 \"text\"","tags":["a",1,null,{"$ref":"z"}],"n":1.25e3}"#)
    items.append(#"{"uuid":"sm-nul\u0000id","text":"its id has a NUL","version":\#(version)}"#)
    return Array("[\(items.joined(separator: ","))]".utf8)
}
