import Flatland
import FlatlandJSON
import Testing

@Suite("Partial updates across responses")
struct PartialUpdateTests {
    @Test(arguments: StoreBackend.allCases) func laterResponseWithSomeKeysKeepsTheOthers(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(
            bytes(#"{"uuid":"u-1","firstname":"Ada","lastname":"Lovelace","age":36,"tags":["math"]}"#))
        let result = try store.ingest(bytes(#"[{"age":37,"uuid":"u-1"}]"#))
        let user = try #require(store.entity(EntityID<User>("u-1")))
        #expect(user.firstname == "Ada")
        #expect(user.lastname == "Lovelace")
        #expect(user.tags == ["math"])
        #expect(user.age == 37)
        #expect(result.changes.updated == [ChangeSet.Update(id: "u-1", fields: ["age"])])
        #expect(store.record(EntityID<User>("u-1"))?.presentFields == ["firstname", "lastname", "age", "tags"])
    }

    @Test(arguments: StoreBackend.allCases) func sameValuesAreNoChange(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"Ada"}"#))
        let result = try store.ingest(bytes(#"{"uuid":"u-1","firstname":"Ada"}"#))
        #expect(result.changes.isEmpty)
    }

    @Test(arguments: StoreBackend.allCases) func nullClearsAnOptional(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","age":36,"email":"ada@example.com","gender":"female"}"#))
        try store.ingest(bytes(#"{"uuid":"u-1","age":null,"gender":null}"#))
        let user = try #require(store.entity(EntityID<User>("u-1")))
        #expect(user.age == nil)
        #expect(user.gender == nil)
        #expect(user.email == "ada@example.com")
        // A cleared field is still present: the server said it is null.
        #expect(store.record(EntityID<User>("u-1"))?.presentFields.contains("age") == true)
    }

    @Test(arguments: StoreBackend.allCases) func nullIsAnErrorForANonOptional(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let error = #expect(throws: IngestError.self) {
            try store.ingest(bytes(#"{"uuid":"u-1","firstname":null}"#))
        }
        #expect(error?.path == "$.firstname")
        #expect(error?.message == "expected string, found null")
    }

    /// A slice (its envelope's identity is not known until it ends, so it is buffered) and a
    /// plain array of entities (read as it streams).
    static let wrongTypeDocuments = [
        """
        {"offset": 0, "total": 4,
         "data": [
          {"uuid": "u-0", "age": 10},
          {"uuid": "u-1", "age": 11},
          {"uuid": "u-2", "age": 12},
          {"uuid": "u-3", "firstname": "Dan", "age": "forty", "lastname": "X"}
         ]}
        """,
        """
        [
          {"uuid": "u-0", "age": 10},
          {"uuid": "u-1", "age": 11},
          {"uuid": "u-2", "age": 12},
          {"uuid": "u-3", "firstname": "Dan", "age": "forty", "lastname": "X"}
        ]
        """,
    ]

    @Test(arguments: wrongTypeDocuments, StoreBackend.each([1, 5, 1 << 20]))
    func wrongTypeNamesTheJSONPathAndLeavesTheStoreUnchanged(text: String, setup: (StoreBackend, Int)) throws {
        let (backend, chunkSize) = setup
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"[{"uuid":"u-0","age":1},{"uuid":"u-3","firstname":"Old"}]"#), endpoint: "/users")
        let before = fingerprint(store)
        let error = try #require(
            #expect(throws: IngestError.self) {
                try ingestChunked(store, bytes(text), chunkSize: chunkSize, endpoint: "/users?offset=0")
            })
        let path = text.hasPrefix("[") ? "$[3].age" : "$.data[3].age"
        #expect(error.code == .decoding)
        #expect(error.path == path)
        #expect(error.message == "expected integer, found string")
        #expect(error.description.hasSuffix("\(path): expected integer, found string"))
        // The location is where the parser stood when the value was judged: at or after the value
        // (for a buffered envelope, where the envelope ended).
        let valueOffset = try #require(text.utf8.firstRange(of: "\"forty\"".utf8)).lowerBound
        let location = try #require(error.location)
        #expect(location.offset >= text.utf8.distance(from: text.utf8.startIndex, to: valueOffset))
        #expect(location.line >= 1 && location.column >= 1)
        if text.hasPrefix("[") {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let line = try #require(lines.firstIndex { $0.contains("\"forty\"") }) + 1
            let column = try #require(lines[line - 1].range(of: "\"forty\"")).lowerBound.utf16Offset(
                in: lines[line - 1])
            #expect(location.line == line)
            #expect(location.column >= column)
            #expect(location.column <= column + "\"forty\"".count + 1)
        }
        #expect(fingerprint(store) == before)
        #expect(store.entity(EntityID<User>("u-0"))?.age == 1)
    }

    @Test(arguments: StoreBackend.allCases) func wrongTypeWhenTheIdentityComesLast(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let error = #expect(throws: IngestError.self) {
            try store.ingest(bytes(#"{"data":[{"uuid":"u-1"},{"friends":["u-2",7],"uuid":"u-9"}]}"#))
        }
        #expect(error?.path == "$.data[1].friends[1]")
        #expect(error?.message == "expected u- id or User object, found number")
        #expect(store.count == 0)
        #expect(store.collections.isEmpty)
    }

    /// An entity's undeclared keys are kept only until the next key: the path through one, long
    /// or short, still names it when something nested under it fails.
    @Test(arguments: [1, 70, 300]) func wrongTypeUnderAnUndeclaredKeyNamesIt(length: Int) throws {
        let store = Store(registry: try seedRegistry())
        let long = String(repeating: "k", count: length)
        let error = #expect(throws: IngestError.self) {
            try store.ingest(
                bytes(#"[{"uuid":"u-1","meta":1,"\#(long)":{"x":{"uuid":"u-2","age":"old"}},"other":2}]"#))
        }
        #expect(error?.path == "$[0].\(long).x.age")
        #expect(store.count == 0)
    }

    @Test(arguments: StoreBackend.allCases) func wrongTypeInANestedRecordNamesTheWholePath(backend: StoreBackend) throws
    {
        let store = try backend.store(registry: try seedRegistry())
        let error = #expect(throws: IngestError.self) {
            try store.ingest(bytes(#"[{"uuid":"u-1","address":{"city":5}}]"#))
        }
        #expect(error?.path == "$[0].address.city")
        #expect(error?.message == "expected string, found number")
    }

    @Test(arguments: StoreBackend.allCases) func skipAndReportKeepsTheRest(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        var options = IngestOptions()
        options.badEntity = .skipAndReport
        let result = try store.ingest(
            bytes(
                #"{"offset":0,"data":[{"uuid":"u-1","age":"x"},{"uuid":"u-2","age":2},{"age":[],"uuid":"u-3"},{"uuid":"u-4"}]}"#
            ), endpoint: "/u", options: options)
        #expect(!store.contains("u-1"))
        #expect(!store.contains("u-3"))
        #expect(store.entity(EntityID<User>("u-2"))?.age == 2)
        #expect(store.contains("u-4"))
        #expect(result.skipped.map(\.path) == ["$.data[0].age", "$.data[2].age"])
        #expect(result.skipped.allSatisfy { $0.code == .decoding })
        #expect(result.taskCollection.items == ["u-2", "u-4"])
        #expect(result.endpointCollection?.items == [nil, "u-2", nil, "u-4"])
    }

    @Test(arguments: StoreBackend.allCases) func skipAndReportLeavesAnEarlierGoodRecordAlone(backend: StoreBackend)
        throws
    {
        let store = try backend.store(registry: try seedRegistry())
        try store.ingest(bytes(#"{"uuid":"u-1","age":5,"firstname":"A"}"#))
        var options = IngestOptions()
        options.badEntity = .skipAndReport
        let result = try store.ingest(bytes(#"{"uuid":"u-1","firstname":"B","age":true}"#), options: options)
        #expect(result.skipped.count == 1)
        #expect(store.entity(EntityID<User>("u-1"))?.firstname == "A")
        #expect(store.entity(EntityID<User>("u-1"))?.age == 5)
    }

    @Test(
        arguments: StoreBackend.allCases,
        [
            (#"{"uuid":"u-1","verified":"yes"}"#, "$.verified", "expected boolean, found string"),
            (#"{"uuid":"u-1","score":"1"}"#, "$.score", "expected number, found string"),
            (#"{"uuid":"u-1","tags":"a"}"#, "$.tags", "expected array, found string"),
            (#"{"uuid":"u-1","tags":["a",{}]}"#, "$.tags[1]", "expected string, found object"),
            (#"{"uuid":"u-1","age":1.5}"#, "$.age", nil),
            (#"{"uuid":"u-1","gender":"robot"}"#, "$.gender", nil),
            (#"{"uuid":"u-1","friends":["d-1"]}"#, "$.friends[0]", nil),
            (#"{"uuid":"u-1","created":"yesterday"}"#, "$.created", nil),
            (#"[{"uuid":"s-1","user":{"uuid":"u-2","age":"x"}}]"#, "$[0].user.age", "expected integer, found string"),
        ] as [(String, String, String?)])
    func decodingErrorsNameThePath(backend: StoreBackend, example: (String, String, String?)) throws {
        let (document, path, message) = example
        let store = try backend.store(registry: try seedRegistry())
        do {
            try store.ingest(bytes(document))
            Issue.record("no error for \(document)")
        } catch {
            #expect(error.code == .decoding)
            #expect(error.path == path)
            if let message { #expect(error.message == message) }
            #expect(!error.message.isEmpty)
            #expect(error.location != nil)
        }
        #expect(store.count == 0)
    }
}

@Suite("Repeated ids within one response")
struct RepeatedIDTests {
    /// Ids that come back within one response: as nested references, as later partial objects,
    /// and one entity nested inside itself.
    static let document = #"""
        {"data":[
          {"uuid":"u-1","firstname":"Ada","friends":[{"uuid":"u-2","firstname":"Bob"}]},
          {"uuid":"u-2","lastname":"Byron","friends":[{"uuid":"u-1","lastname":"Lovelace","firstname":"Augusta"}]},
          {"uuid":"u-3","friends":[{"uuid":"u-3","firstname":"Inner","age":7}],"firstname":"Outer"},
          {"uuid":"u-1","age":36,"tags":["math"]},
          {"uuid":"u-2","firstname":"Robert"}
        ]}
        """#

    /// An id with bytes that are not UTF-8, read with repair on: the record is found again by
    /// the repaired text, in the same response and afterwards (the id's hash is worked out from
    /// the bytes the parser hands over, which must be the text's).
    @Test func repairedIDIsFoundByItsText() throws {
        let store = Store(registry: try seedRegistry())
        var options = IngestOptions()
        options.parser.replaceInvalidUTF8 = true
        var document = Array(#"[{"uuid":"u-a"#.utf8) + [0xFF] + Array(#"b","age":1},{"uuid":"u-a"#.utf8) + [0xFF]
        document += Array(#"b","firstname":"F"}]"#.utf8)
        try store.ingest(document, options: options)
        let user = try #require(store.entity(EntityID<User>("u-a\u{FFFD}b")))
        #expect(user.age == 1)
        #expect(user.firstname == "F")
        #expect(store.count(prefix: "u") == 1)
    }

    /// Thousands of entities each met twice in one response (first as a friend, later whole):
    /// every later object finds its id's draft again, whatever the table's size and collisions.
    @Test func manyEntitiesMetAgainInOneResponse() throws {
        let store = Store(registry: try seedRegistry())
        let n = 5000
        let users = (0..<n).map { i in
            let friend = (i + 1) % n
            return #"{"uuid":"u-\#(i)","friends":[{"uuid":"u-\#(friend)","firstname":"F\#(friend)"}],"age":\#(i)}"#
        }
        let result = try store.ingest(bytes("[" + users.joined(separator: ",") + "]"))
        #expect(result.changes.inserted.count == n)
        #expect(store.count(prefix: "u") == n)
        for i in [0, 1, 2, 777, 4098, n - 1] {
            let user = try #require(store.entity(EntityID<User>("u-\(i)")))
            #expect(user.age == i)
            #expect(user.firstname == "F\(i)")
            #expect(user.friends == [EntityID("u-\((i + 1) % n)")])
        }
    }

    @Test(arguments: StoreBackend.allCases) func laterObjectsWinWhetherDecodedInPlaceOrFolded(backend: StoreBackend)
        throws
    {
        // The default policy decodes a repeated id straight into the batch's draft; with
        // skip-and-report each object keeps a draft of its own that is folded in when it ends.
        var folded = IngestOptions()
        folded.badEntity = .skipAndReport
        var records: [[String]] = []
        for options in [IngestOptions(), folded] {
            let store = try backend.store(registry: try seedRegistry())
            let result = try store.ingest(bytes(Self.document), options: options)
            #expect(result.changes.inserted == ["u-2", "u-1", "u-3"])
            let u1 = try #require(store.entity(EntityID<User>("u-1")))
            #expect(u1.firstname == "Augusta")
            #expect(u1.lastname == "Lovelace")
            #expect(u1.age == 36)
            #expect(u1.tags == ["math"])
            #expect(u1.friends == [EntityID("u-2")])
            let u2 = try #require(store.entity(EntityID<User>("u-2")))
            #expect(u2.firstname == "Robert")
            #expect(u2.lastname == "Byron")
            #expect(u2.friends == [EntityID("u-1")])
            // The outer object ends last, so its fields win over the nested copy's.
            let u3 = try #require(store.entity(EntityID<User>("u-3")))
            #expect(u3.firstname == "Outer")
            #expect(u3.age == 7)
            #expect(u3.friends == [EntityID("u-3")])
            records.append(fingerprint(store).filter { $0.hasPrefix("u-") })
        }
        #expect(records[0] == records[1])
        #expect(records[0].count == 3)
    }
}

/// A field may be any writable key path: a stored property is written in place at its offset,
/// anything else (here a computed property with a setter) through the key path itself.
struct Memo: Entity, Equatable {
    static let prefix = "mo"
    var id: EntityID<Memo>
    var text = ""
    var storedTitle = ""
    var title: String {
        get { storedTitle }
        set { storedTitle = newValue.uppercased() }
    }

    init(id: EntityID<Memo>) { self.id = id }

    static let fields: [Field<Memo>] = [Field("text", \.text), Field("title", \.title)]
}

@Suite("Fields on stored and computed properties")
struct FieldStorageTests {
    @Test(arguments: StoreBackend.allCases) func storedAndComputedPropertiesBothDecode(backend: StoreBackend) throws {
        let store = try backend.store(registry: try EntityRegistry([Memo.self]))
        try store.ingest(bytes(#"[{"uuid":"mo-1","text":"first","title":"hello"},{"uuid":"mo-2","title":"x"}]"#))
        try store.ingest(bytes(#"{"uuid":"mo-1","text":"second"}"#))
        let one = try #require(store.entity(EntityID<Memo>("mo-1")))
        #expect(one.text == "second")
        #expect(one.title == "HELLO")  // the setter ran
        let two = try #require(store.entity(EntityID<Memo>("mo-2")))
        #expect(two.text == "")
        #expect(two.title == "X")
    }
}
