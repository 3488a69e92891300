import Flatland
import FlatlandJSON
import Foundation
import Testing

private struct OtherUser: Entity {
    static let prefix = "u"
    var id: EntityID<OtherUser>
    init(id: EntityID<OtherUser>) { self.id = id }
    static let fields: [Field<OtherUser>] = []
}

private struct UpperPrefix: Entity {
    static let prefix = "U"
    var id: EntityID<UpperPrefix>
    init(id: EntityID<UpperPrefix>) { self.id = id }
    static let fields: [Field<UpperPrefix>] = []
}

private struct DigitPrefix: Entity {
    static let prefix = "1u"
    var id: EntityID<DigitPrefix>
    init(id: EntityID<DigitPrefix>) { self.id = id }
    static let fields: [Field<DigitPrefix>] = []
}

private struct EmptyPrefix: Entity {
    static let prefix = ""
    var id: EntityID<EmptyPrefix>
    init(id: EntityID<EmptyPrefix>) { self.id = id }
    static let fields: [Field<EmptyPrefix>] = []
}

private struct DashPrefix: Entity {
    static let prefix = "u-x"
    var id: EntityID<DashPrefix>
    init(id: EntityID<DashPrefix>) { self.id = id }
    static let fields: [Field<DashPrefix>] = []
}

private struct UnderscorePrefix: Entity {
    static let prefix = "a_b"
    var id: EntityID<UnderscorePrefix>
    init(id: EntityID<UnderscorePrefix>) { self.id = id }
    static let fields: [Field<UnderscorePrefix>] = []
}

private struct TwiceDeclared: Entity {
    static let prefix = "tw"
    var id: EntityID<TwiceDeclared>
    var a = ""
    init(id: EntityID<TwiceDeclared>) { self.id = id }
    static let fields: [Field<TwiceDeclared>] = [Field("a", \.a), Field("a", \.a)]
}

/// Declares a field under the id's own key, right where the next field is looked for first.
private struct EchoesID: Entity {
    static let prefix = "ec"
    var id: EntityID<EchoesID>
    var uuid = ""
    var name = ""
    init(id: EntityID<EchoesID>) { self.id = id }
    static let fields: [Field<EchoesID>] = [Field("uuid", \.uuid), Field("name", \.name)]
}

@Suite("Entities and registry")
struct EntityRegistryTests {
    /// The id member is the id, even where the type declares a field with its key.
    @Test func idKeyWinsOverAFieldOfTheSameName() throws {
        let store = Store(registry: try EntityRegistry([EchoesID.self]))
        // ec-3 repeats its id member where the declared "uuid" field is the next one expected.
        try store.ingest(
            bytes(#"[{"uuid":"ec-1","name":"n"},{"name":"m","uuid":"ec-2"},{"uuid":"ec-3","uuid":"ec-3","name":"o"}]"#))
        for id in ["ec-1", "ec-2", "ec-3"] {
            let entity = try #require(store.entity(EntityID<EchoesID>(id)))
            #expect(entity.uuid == "")
            #expect(store.record(id: id)?.presentFields == ["name"])
        }
        #expect(store.entity(EntityID<EchoesID>("ec-2"))?.name == "m")
    }

    @Test func registersDistinctPrefixes() throws {
        let registry = try seedRegistry()
        #expect(registry.prefixes == ["d", "s", "u"])
        #expect(registry.contains(prefix: "u"))
        #expect(!registry.contains(prefix: "x"))
    }

    @Test func duplicatePrefixIsAnErrorAtRegistration() throws {
        var registry = try seedRegistry()
        #expect(throws: RegistryError.self) { try registry.register(OtherUser.self) }
        #expect(throws: RegistryError.self) { try registry.register(User.self) }
        #expect(throws: RegistryError.self) { _ = try EntityRegistry([User.self, OtherUser.self]) }
        // The failed registration left the registry as it was.
        #expect(registry.prefixes == ["d", "s", "u"])
        do {
            try registry.register(OtherUser.self)
        } catch {
            #expect(error.message.contains("\"u\""))
            #expect(error.message.contains("User"))
        }
    }

    @Test(arguments: ["U", "1u", "", "u-x", "a_b"])
    func malformedPrefixIsAnError(prefix: String) throws {
        var registry = EntityRegistry()
        #expect(throws: RegistryError.self) {
            switch prefix {
            case "U": try registry.register(UpperPrefix.self)
            case "1u": try registry.register(DigitPrefix.self)
            case "": try registry.register(EmptyPrefix.self)
            case "u-x": try registry.register(DashPrefix.self)
            default: try registry.register(UnderscorePrefix.self)
            }
        }
        #expect(registry.prefixes.isEmpty)
    }

    /// Fields are found by key in any order, and keys the type does not declare (here ones that
    /// share a declared key's length and first, middle and last bytes) are passed over.
    @Test func fieldsInAnyOrderAmongUndeclaredLookalikes() throws {
        let store = Store(registry: try seedRegistry())
        try store.ingest(
            bytes(
                #"""
                {"tags":["t"],"tXgs":1,"address":{"city":"C"},"devices":["d-1"],"friends":["u-2"],
                 "avatar":"https://a.example/x.png","created":"2024-01-02T03:04:05.000Z","score":2.5,
                 "verified":true,"gender":"other","agX":1,"age":41,"eMail":"no","email":"e@x","lastname":"L",
                 "firstnamE":"no","firstname":"F","uuid":"u-1","zz":null}
                """#))
        let user = try #require(store.entity(EntityID<User>("u-1")))
        #expect(user.firstname == "F")
        #expect(user.lastname == "L")
        #expect(user.email == "e@x")
        #expect(user.age == 41)
        #expect(user.gender == .other)
        #expect(user.verified)
        #expect(user.score == 2.5)
        #expect(user.created == Date(timeIntervalSince1970: 1_704_164_645))
        #expect(user.avatar == URL(string: "https://a.example/x.png"))
        #expect(user.friends == [EntityID("u-2")])
        #expect(user.devices == [EntityID("d-1")])
        #expect(user.address?.city == "C")
        #expect(user.tags == ["t"])
        #expect(store.record(id: "u-1")?.presentFields.count == User.fields.count)
    }

    @Test func keyDeclaredTwiceIsAnError() {
        var registry = EntityRegistry()
        #expect(throws: RegistryError.self) { try registry.register(TwiceDeclared.self) }
    }

    @Test func generatedIDsArePrefixedURLSafeAndUnique() {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var seen = Set<String>()
        for _ in 0..<20_000 {
            let id = EntityID<User>.generate()
            #expect(id.prefix == "u")
            #expect(id.rawValue.hasPrefix("u-"))
            let rest = id.rawValue.dropFirst(2)
            #expect(rest.count == 32)
            #expect(rest.allSatisfy { allowed.contains($0) })
            #expect(EntityID<User>(validating: id.rawValue) == id)
            seen.insert(id.rawValue)
        }
        #expect(seen.count == 20_000)
        #expect(EntityID<Device>.generate().rawValue.hasPrefix("d-"))
    }

    @Test func generatedIDsUseTheWholeAlphabet() {
        var used = Set<Character>()
        for _ in 0..<2_000 { used.formUnion(EntityID<User>.generate().rawValue.dropFirst(2)) }
        #expect(used.count == 64)
    }

    @Test(arguments: [
        ("u-1", true), ("u-lQ7tSlU4A9OmDjIefiOEMG5Dsy02Yt3q", true), ("u-a-b", true), ("d-1", false),
        ("u-", false), ("u", false), ("U-1", false), ("-1", false), ("", false), ("uu-1", false),
    ])
    func typedIDValidation(raw: String, valid: Bool) {
        let id = EntityID<User>(validating: raw)
        #expect((id != nil) == valid)
        if let id { #expect(id.rawValue == raw) }
    }

    @Test(
        arguments: [
            ("u-1", "u"), ("u1-x", "u1"), ("ab9-x-y", "ab9"), ("U-1", nil), ("u-", nil), ("1-a", nil), ("u", nil),
            ("-x", nil), ("u_1-x", nil), ("ü-1", nil), ("12", nil),
        ] as [(String, String?)])
    func idFormatPrefix(raw: String, prefix: String?) {
        #expect(EntityIDFormat.prefix(of: raw) == prefix)
    }

    @Test func typedIDsCompareByRawValue() {
        let ids = [EntityID<User>("u-c"), EntityID<User>("u-a"), EntityID<User>("u-b")]
        #expect(ids.sorted().map(\.rawValue) == ["u-a", "u-b", "u-c"])
        #expect(EntityID<User>("u-a").description == "u-a")
    }
}

@Suite("Present and missing fields")
struct PresentFieldsTests {
    @Test func presentFieldsFollowWhatResponsesCarried() throws {
        let store = Store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","age":30,"firstname":"Ada"}"#))
        let record = try #require(store.record(EntityID<User>("u-1")))
        // Declaration order, not arrival order; never the id.
        #expect(record.presentFields == ["firstname", "age"])
        try store.ingest(bytes(#"{"uuid":"u-1","email":null}"#))
        #expect(store.record(EntityID<User>("u-1"))?.presentFields == ["firstname", "email", "age"])
    }

    @Test func missingFieldsAddUUIDWhenAnyAreMissing() throws {
        let store = Store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"Ada","age":30}"#))
        let record = try #require(store.record(EntityID<User>("u-1")))
        #expect(record.missingFields(for: ["firstname", "email", "age", "tags"]) == ["uuid", "email", "tags"])
        #expect(record.missingFields(for: ["uuid", "email"]) == ["uuid", "email"])
        #expect(record.missingFields(for: ["firstname", "age"]).isEmpty)
        #expect(record.missingFields(for: ["uuid", "firstname"]).isEmpty)
        #expect(record.missingFields(for: []).isEmpty)
    }

    @Test func untypedRecordsKnowTheirFieldsToo() throws {
        let store = Store()
        try store.ingest(bytes(#"{"uuid":"x-1","b":1,"a":{"k":2}}"#))
        let record = try #require(store.record(id: "x-1"))
        #expect(record.presentFields == ["b", "a"])
        #expect(record.missingFields(for: ["a", "c"]) == ["uuid", "c"])
        #expect(record.missingFields(for: ["a", "b"]).isEmpty)
    }
}
