import Flatland
import FlatlandJSON
import Foundation
import Testing

@Suite("Encoding and decoding entities")
struct EncodingTests {
    static func fullUser(created: Date) -> User {
        var user = User(id: EntityID("u-lQ7tSlU4A9OmDjIefiOEMG5Dsy02Yt3q"))
        user.firstname = "Zoë \"Z\" Ångström"
        user.lastname = "Line\nbreak\t\u{1F600}"
        user.email = "zoe@example.com"
        user.age = -42
        user.gender = .other
        user.verified = true
        user.score = 0.1 + 0.2
        user.created = created
        user.avatar = URL(string: "https://example.com/a%20b/pic.png?size=2&x=%C3%A9")
        user.friends = [EntityID("u-2"), EntityID("u-3")]
        user.devices = [EntityID("d-1")]
        var address = Address()
        address.city = "Zürich"
        address.zip = nil
        user.address = address
        user.tags = ["", "a,b", "ü"]
        return user
    }

    static let dates: [Date] = [
        Date(timeIntervalSince1970: 1_709_296_496.789),
        Date(timeIntervalSince1970: 1_709_296_496.123456),
        Date(timeIntervalSince1970: 0),
        Date(timeIntervalSince1970: -86_400.5),
        Date(timeIntervalSince1970: 951_782_400.001),  // 2000-02-29
    ]

    @Test(arguments: StoreBackend.allCases, dates)
    func decodingWhatWasEncodedGivesTheSameEntity(backend: StoreBackend, created: Date) throws {
        let user = Self.fullUser(created: created)
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(user.jsonObject())
        let decoded = try #require(store.entity(user.id))
        #expect(decoded == user)
        #expect(decoded.created == created)
        #expect(store.record(user.id)?.presentFields == User.fields.map(\.key))
    }

    /// The ingestor makes strings from the parser's bytes without checking their UTF-8 again:
    /// the strings must still be the text, equal to and hashing like strings made any other way.
    @Test(arguments: [false, true])
    func stringsKeepTheirTextWhateverTheirUTF8(replaceInvalidUTF8: Bool) throws {
        let cases: [(json: [UInt8], text: String)] = [
            (
                bytes("plain ASCII, long enough not to be a small string"),
                "plain ASCII, long enough not to be a small string"
            ),
            (bytes("Zoë"), "Zoë"),
            (bytes("日本語のテキスト、長め"), "日本語のテキスト、長め"),
            (bytes("\u{1F600} and e\u{301}"), "\u{1F600} and e\u{301}"),
            (bytes(#"\u00e9\uD83D\uDE00\n\"x\""#), "é\u{1F600}\n\"x\""),
            (bytes(""), ""),
        ]
        var json = bytes(#"{"uuid":"u-1","tags":["#)
        var expected: [String] = []
        for (i, c) in cases.enumerated() {
            if i > 0 { json += bytes(",") }
            json += bytes("\"") + c.json + bytes("\"")
            expected.append(c.text)
        }
        if replaceInvalidUTF8 {
            // A lone continuation byte and a truncated sequence, each repaired to U+FFFD.
            json += bytes(#","a"#) + [0x80] + bytes(#"b",""#) + [0xE6, 0x97] + bytes(#"""#)
            expected += ["a\u{FFFD}b", "\u{FFFD}"]
        }
        json += bytes(#"],"lastname":"Ångström"}"#)
        var options = IngestOptions()
        options.parser.replaceInvalidUTF8 = replaceInvalidUTF8
        let store = Store(registry: try seedRegistry())
        try store.ingest(json, options: options)
        let user = try #require(store.entity(EntityID<User>("u-1")))
        #expect(user.tags == expected)
        #expect(user.lastname == "Ångström")
        #expect(user.tags.map(\.count) == expected.map(\.count))
        #expect(Set(user.tags + expected).count == Set(expected).count)
        #expect(user.tags.map { $0.unicodeScalars.map(\.value) } == expected.map { $0.unicodeScalars.map(\.value) })
    }

    @Test func dateTextHasFractionalSecondsInUTC() throws {
        let user = Self.fullUser(created: Date(timeIntervalSince1970: 1_709_296_496.789))
        let value = try JSONValue(parsing: user.jsonObject(only: ["created"]))
        #expect(value["created"] == "2024-03-01T12:34:56.789Z")
    }

    @Test(
        arguments: StoreBackend.allCases,
        [
            ("2024-03-01T12:34:56.789Z", 1_709_296_496.789),
            ("2024-03-01T14:34:56.789+02:00", 1_709_296_496.789),
            ("2024-03-01T12:34:56Z", 1_709_296_496.0),
            ("2024-03-01t12:34:56.5z", 1_709_296_496.5),
        ])
    func datesDecodeFromISO8601(backend: StoreBackend, example: (String, Double)) throws {
        let (text, seconds) = example
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","created":"\#(text)"}"#))
        let created = try #require(store.entity(EntityID<User>("u-1"))?.created)
        #expect(abs(created.timeIntervalSince1970 - seconds) < 1e-6)
    }

    @Test(arguments: StoreBackend.allCases) func onlySomeFieldsForAPartialBody(backend: StoreBackend) throws {
        let user = Self.fullUser(created: Date(timeIntervalSince1970: 10))
        let value = try JSONValue(parsing: user.jsonObject(only: ["age", "address"]))
        guard case .object(let object) = value else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == ["uuid", "age", "address"])
        #expect(value["uuid"] == .string(user.id.rawValue))
        #expect(value["age"] == -42)
        #expect(value["address"] == ["city": "Zürich", "zip": nil])

        // Applied to a store that knows the user, it changes those fields only.
        let store = try backend.store(registry: try seedRegistry())
        var old = user
        old.age = 1
        old.address = nil
        try store.upsert(old)
        let result = try store.ingest(user.jsonObject(only: ["age", "address"]))
        #expect(store.entity(user.id) == user)
        #expect(result.changes.updated.first?.fields == ["age", "address"])
    }

    @Test(arguments: StoreBackend.allCases) func customIDKeyAndTheWriter(backend: StoreBackend) throws {
        let user = Self.fullUser(created: Date(timeIntervalSince1970: 10))
        var writer = JSONWriter()
        writer.beginArray()
        user.writeJSON(to: &writer, idKey: "id", only: ["firstname"])
        user.writeJSON(to: &writer, idKey: "id", only: [])
        writer.endArray()
        let value = try JSONValue(parsing: writer.bytes)
        #expect(
            value == [
                ["id": .string(user.id.rawValue), "firstname": .string(user.firstname)],
                ["id": .string(user.id.rawValue)],
            ])
        let store = try backend.store(registry: try seedRegistry())
        var options = IngestOptions()
        options.resolver = PrefixedIDResolver(key: "id")
        try store.ingest(writer.bytes, options: options)
        #expect(store.entity(user.id)?.firstname == user.firstname)
        #expect(store.record(user.id)?.presentFields == ["firstname"])
    }

    @Test(arguments: StoreBackend.allCases) func recordFieldsRestoreToTheSameEntity(backend: StoreBackend) throws {
        let user = Self.fullUser(created: Date(timeIntervalSince1970: 1_709_296_496.789))
        let store = try backend.store(registry: try seedRegistry())
        try store.upsert(user)
        let record = try #require(store.record(user.id))
        let other = try backend.store(registry: try seedRegistry())
        let restored = try other.restore(
            id: record.id, prefix: record.prefix, fields: record.fields, classVersion: record.classVersion,
            dataVersion: record.dataVersion)
        #expect(restored.entity(as: User.self) == user)
        #expect(other.entity(user.id) == user)
        #expect(other.record(user.id)?.presentFields == record.presentFields)
    }

    @Test(arguments: StoreBackend.allCases) func nestedEntitiesEncodeAsTheirIDs(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"s-1","user":{"uuid":"u-1","firstname":"A"},"device":{"uuid":"d-1"}}"#))
        let record = try #require(store.record(id: "s-1"))
        #expect(canonical(.object(record.fields)) == (try json(#"{"user":"u-1","device":"d-1"}"#)))
    }
}
