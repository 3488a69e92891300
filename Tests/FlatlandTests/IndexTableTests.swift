import Flatland
import Testing

@testable import Flatland

/// One secondary index's table: every operation checked against a dictionary, with values whose
/// hashes collide so that probes meet other values on their way.
@Suite struct IndexTableTests {
    /// A value whose hash is chosen by the test: most share a few hashes, some share one.
    struct Colliding: Hashable, Sendable {
        var n: Int
        func hash(into hasher: inout Hasher) { hasher.combine(n % 5 == 0 ? 0 : n % 3) }
    }

    @Test func insertRemoveAndLookUpAgainstADictionary() {
        var table = IndexTable()
        var model: [Int: Set<String>] = [:]
        var rng = RecordTableTests.SplitMix(state: 7)
        for step in 0..<3000 {
            let n = Int(rng.next() % 200)
            let id = "u-\(rng.next() % 50)"
            let value = IndexValue(Colliding(n: n))
            if rng.next() % 3 == 0 {
                table.remove(id, for: value)
                model[n]?.remove(id)
            } else {
                table.insert(id, for: value)
                model[n, default: []].insert(id)
            }
            if step % 500 == 499 || step == 2999 {
                // A value with no ids left is gone from the table.
                #expect(table.count == model.values.filter { !$0.isEmpty }.count)
                for n in 0..<200 {
                    #expect(Set(table.ids(for: IndexValue(Colliding(n: n)))) == model[n] ?? [], "value \(n)")
                }
            }
        }
        #expect(table.ids(for: IndexValue(Colliding(n: 1000))).isEmpty)
    }

    @Test func stringValuesAndUnion() {
        var a = IndexTable()
        var b = IndexTable()
        #expect(a.isEmpty)
        for i in 0..<100 { a.insert("u-\(i)", for: IndexValue("m\(i % 7)@x")) }
        for i in 100..<150 { b.insert("u-\(i)", for: IndexValue("m\(i % 11)@x")) }
        a.formUnion(b)
        for m in 0..<11 {
            let expected = Set((0..<100).filter { m < 7 && $0 % 7 == m } + (100..<150).filter { $0 % 11 == m })
                .map { "u-\($0)" }
            #expect(Set(a.ids(for: IndexValue("m\(m)@x"))) == Set(expected), "m\(m)@x")
        }
        // A value whose ids are all gone leaves the table.
        var c = IndexTable()
        c.insert("u-1", for: IndexValue("x"))
        c.remove("u-1", for: IndexValue("x"))
        #expect(c.isEmpty)
        #expect(c.ids(for: IndexValue("x")).isEmpty)
    }
}

/// The first response into an empty in-memory store fills the indexes as each entity ends; later
/// objects of the same response that change an entity must leave the index agreeing with the
/// records, exactly as when the same response is merged into a store that already held records.
@Suite struct FirstResponseIndexTests {
    /// Every value the tests use, with the ids the index gives for it and the ids of the records
    /// that hold it.
    static func index<E: Entity, V: Hashable & Sendable>(
        _ store: Store, _ keyPath: KeyPath<E, V> & Sendable, values: [V]
    ) throws -> [String] {
        try values.map { value in
            let indexed = try store.entities(where: keyPath, equals: value).map(\.id.rawValue)
            let held = store.ids(prefix: E.prefix).filter { store.entity(EntityID<E>($0))?[keyPath: keyPath] == value }
            return "\(value): \(indexed) held by \(held)"
        }
    }

    /// Ingests `json` into an empty store and into one that already holds an unrelated record,
    /// and returns both stores.
    static func both(_ registry: EntityRegistry, _ json: String) throws -> (empty: Store, merged: Store) {
        let empty = Store(registry: registry)
        let merged = Store(registry: registry)
        try merged.ingest(bytes(#"{"uuid":"d-0","name":"already here"}"#))
        try empty.ingest(bytes(json))
        try merged.ingest(bytes(json))
        return (empty, merged)
    }

    @Test func anEntityNestedInItselfIsFoldedTogether() throws {
        // The inner object ends first and joins the batch; the outer one is folded into it.
        let json =
            #"[{"uuid":"u-1","email":"a@x","friends":[{"uuid":"u-1","email":"b@x"}]},{"uuid":"u-2","email":"b@x"}]"#
        let (empty, merged) = try Self.both(try seedRegistry(), json)
        let values = ["a@x", "b@x"]
        let index = try Self.index(empty, \User.email, values: values)
        #expect(try index == Self.index(merged, \User.email, values: values))
        #expect(empty.entity(EntityID<User>("u-1"))?.email == "a@x")
        #expect(try empty.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-1"], "\(index)")
        #expect(try empty.entities(where: \User.email, equals: "b@x").map(\.id.rawValue) == ["u-2"], "\(index)")
    }

    @Test func aLaterObjectWritingOtherFieldsKeepsTheValue() throws {
        let json = #"[{"uuid":"u-1","email":"a@x"},{"uuid":"u-2","friends":[{"uuid":"u-1","firstname":"A"}]}]"#
        let (empty, merged) = try Self.both(try seedRegistry(), json)
        #expect(
            try Self.index(empty, \User.email, values: ["a@x", ""])
                == Self.index(merged, \User.email, values: ["a@x", ""]))
        #expect(try empty.entities(where: \User.email, equals: "a@x").map(\.id.rawValue) == ["u-1"])
        #expect(empty.entity(EntityID<User>("u-1"))?.firstname == "A")
    }

    @Test func aVersionedEntitySeenTwice() throws {
        let registry = try EntityRegistry([Article.self])
        for json in [
            #"[{"uuid":"ar-1","title":"a","rev":1},{"uuid":"ar-2","title":"a","rev":1},{"uuid":"ar-1","title":"b","rev":2}]"#,
            #"[{"uuid":"ar-1","title":"b","rev":2},{"uuid":"ar-2","title":"a","rev":1},{"uuid":"ar-1","title":"a","rev":1}]"#,
        ] {
            let (empty, merged) = try Self.both(registry, json)
            #expect(
                try Self.index(empty, \Article.title, values: ["a", "b"])
                    == Self.index(merged, \Article.title, values: ["a", "b"]))
            #expect(try empty.entities(where: \Article.title, equals: "a").map(\.id.rawValue) == ["ar-2"], "\(json)")
            #expect(try empty.entities(where: \Article.title, equals: "b").map(\.id.rawValue) == ["ar-1"], "\(json)")
        }
    }

    @Test func anIndexOnAComputedPropertyFollowsEveryField() throws {
        let registry = try EntityRegistry([Contact.self])
        let json =
            #"[{"uuid":"ct-1","first":"Ada","last":"Byron"},{"uuid":"ct-2","knows":{"uuid":"ct-1","last":"Lovelace"}}]"#
        let (empty, merged) = try Self.both(registry, json)
        let values = ["Ada Byron", "Ada Lovelace", " "]
        #expect(
            try Self.index(empty, \Contact.fullName, values: values)
                == Self.index(merged, \Contact.fullName, values: values))
        #expect(try empty.entities(where: \Contact.fullName, equals: "Ada Lovelace").map(\.id.rawValue) == ["ct-1"])
        #expect(try empty.entities(where: \Contact.fullName, equals: "Ada Byron").isEmpty)
    }
}

/// A type indexed on a computed property: writing any field may change it.
struct Contact: Entity, Equatable {
    static let prefix = "ct"
    var id: EntityID<Contact>
    var first = ""
    var last = ""
    var knows: EntityID<Contact>?
    var fullName: String { first + " " + last }
    init(id: EntityID<Contact>) { self.id = id }
    static let fields: [Field<Contact>] = [Field("first", \.first), Field("last", \.last), Field("knows", \.knows)]
    static let indexes: [EntityIndex<Contact>] = [EntityIndex("fullName", \.fullName)]
}
