import Flatland
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Testing

/// The record format of schema version 4 attacked from outside: bytes written into the file with
/// plain SQL, as a damaged disk or another build would, read back through the public API.
@Suite("SQLite record format under attack")
struct RecordFormatAttackTests {
    /// A closed store file of three `Sample`s (`sm-0`…`sm-2`), the untyped `note-1` and
    /// `sm-nul\0id`.
    static func sampleFile() throws -> String {
        let path = Scratch.path()
        let persistence = try SQLitePersistence(path: path)
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        try store.ingest(sampleResponse(count: 3), endpoint: "/samples")
        persistence.close()
        return path
    }

    /// Replaces the stored fields of record `id` with `fields`, with plain SQL.
    static func overwrite(_ path: String, id: String, fields: [UInt8]) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { db in
            try db.execute(sql: "UPDATE entities SET fields = ? WHERE id = ?", arguments: [Data(fields), id])
            #expect(db.changesCount == 1)
        }
    }

    /// A key token and its text.
    static func key(_ text: String) -> [UInt8] { [JSONTokenEncoding.key] + leb(text.utf8.count) + Array(text.utf8) }

    /// A length as unsigned LEB128.
    static func leb(_ value: Int) -> [UInt8] {
        var v = UInt64(value)
        var out: [UInt8] = []
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        return out + [UInt8(v)]
    }

    /// `{key: <depth - 1 arrays>}`: an object nested `depth` deep in all.
    static func nested(_ key: String, depth: Int) -> [UInt8] {
        [0xF1, 0] + Self.key(key) + [UInt8](repeating: 2, count: depth - 1) + [UInt8](repeating: 3, count: depth - 1)
            + [1]
    }

    /// Damage to one record, written in place of its fields.
    struct Attack: Sendable, CustomStringConvertible {
        let description: String
        let id: String
        let fields: [UInt8]
    }

    static let text = Array("text".utf8)

    /// Byte sequences that are not well-formed UTF-8 (an encoded surrogate, overlongs, a code
    /// point past U+10FFFF, a lone continuation byte, a sequence cut short), as a string and as
    /// a key.
    static let illFormed: [(String, [UInt8])] = [
        ("an encoded surrogate", [0xED, 0xA0, 0x80]), ("an overlong NUL", [0xC0, 0x80]),
        ("an overlong slash", [0xE0, 0x80, 0xAF]), ("past U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
        ("a lone continuation byte", [0x80]), ("a sequence cut short", [0xE2, 0x82]), ("byte 0xFF", [0xFF]),
    ]

    /// Texts a number token must not hold.
    static let notNumbers = ["", "-", "01", "1.", ".5", "1e", "+1", "NaN", "Infinity", "1 ", "0x10", "1e+"]

    static let attacks: [Attack] =
        illFormed.map { name, bytes in
            Attack(
                description: "a string with \(name)", id: "sm-1",
                fields: [0xF1, 0] + key("text") + [5] + leb(bytes.count + 1) + [0x61] + bytes + [1])
        }
        + illFormed.map { name, bytes in
            Attack(
                description: "a key with \(name)", id: "note-1",
                fields: [0xF1, 0, 4] + leb(bytes.count) + bytes + [9, 1])
        }
        + notNumbers.map { number in
            Attack(
                description: "the number \"\(number)\"", id: "sm-1",
                fields: [0xF1, 0] + key("int") + [6] + leb(number.utf8.count) + Array(number.utf8) + [1])
        }
        + [
            // Lengths that claim more than there is, up to what no allocation may follow.
            Attack(
                description: "a length of 2^32 - 1", id: "sm-1",
                fields: [0xF1, 0] + key("text") + [5, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x61, 1]),
            Attack(
                description: "a length of 2^35 - 1", id: "sm-1",
                fields: [0xF1, 0] + key("text") + [5, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x61, 1]),
            Attack(
                description: "a length of ten bytes (past 2^64)", id: "sm-1",
                fields: [0xF1, 0] + key("text") + [5] + [UInt8](repeating: 0xFF, count: 9) + [0x01, 0x61, 1]),
            Attack(
                description: "a length whose last byte is missing", id: "sm-1",
                fields: [0xF1, 0] + key("text") + [5, 0x80]),
            Attack(description: "a key with no length", id: "sm-1", fields: [0xF1, 0, 4]),
            Attack(
                description: "one byte past the end", id: "sm-1", fields: [0xF1, 0] + key("text") + [5, 2, 0x61, 1]),
            // Token kinds.
            Attack(
                description: "the reference kind (10)", id: "sm-1", fields: [0xF1, 0] + key("text") + [10, 1, 0x61, 1]),
            Attack(description: "kind 11", id: "note-1", fields: [0xF1, 0] + key("a") + [11, 1]),
            Attack(description: "kind 0xF1", id: "note-1", fields: [0xF1, 0] + key("a") + [0xF1, 1]),
            Attack(description: "kind 0xFF", id: "note-1", fields: [0xF1, 0] + key("a") + [0xFF, 1]),
            // The shape of the whole.
            Attack(description: "the marker alone", id: "sm-1", fields: [0xF1]),
            Attack(description: "no bytes", id: "sm-1", fields: []),
            Attack(description: "an object never closed", id: "sm-1", fields: [0xF1, 0]),
            Attack(description: "two objects", id: "sm-1", fields: [0xF1, 0, 1, 0, 1]),
            Attack(description: "an array at the top", id: "note-1", fields: [0xF1, 2, 3]),
            Attack(description: "a string at the top", id: "note-1", fields: [0xF1, 5, 1, 0x61]),
            Attack(
                description: "an array closed as an object", id: "note-1", fields: [0xF1, 0] + key("a") + [2, 1, 1]),
            Attack(description: "an end with nothing open", id: "note-1", fields: [0xF1, 0, 1, 1]),
            Attack(
                description: "a key in an array", id: "note-1", fields: [0xF1, 0] + key("a") + [2] + key("b") + [3, 1]),
            Attack(description: "a key after a key", id: "note-1", fields: [0xF1, 0] + key("a") + key("b") + [9, 1]),
            Attack(description: "an object closed after a key", id: "note-1", fields: [0xF1, 0] + key("a") + [1]),
            // Nesting deep enough to exhaust any stack a reader recursing on it would have.
            Attack(
                description: "untyped fields nested 1,000,000 deep", id: "note-1", fields: nested("a", depth: 1_000_000)
            ),
            Attack(
                description: "a JSON field nested 1,000,000 deep", id: "sm-1", fields: nested("json", depth: 1_000_000)),
            Attack(
                description: "untyped fields one deeper than a response may nest", id: "note-1",
                fields: nested("a", depth: JSONLimits.default.maxDepth + 1)),
        ]

    /// Whatever the damage, `verify` names the record, the other records read as they were, and
    /// this one reads as absent with the error remembered: no crash, no hang, no allocation of
    /// a claimed length.
    @Test(arguments: attacks)
    func damageIsFoundByVerifyAndTheRecordReadsAsAbsent(_ attack: Attack) throws {
        let path = try Self.sampleFile()
        defer { Scratch.remove(path) }
        try Self.overwrite(path, id: attack.id, fields: attack.fields)

        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        defer { persistence.close() }
        let report = try persistence.verify()
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.hasPrefix("record \(attack.id): its stored fields are damaged") == true)
        #expect(throws: SQLiteStoreError.self) { try report.check() }
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(store.record(id: attack.id) == nil)
        #expect(store.lastPersistenceError != nil)
        #expect(store.record(id: "sm-0")?.entity(as: Sample.self)?.text.hasSuffix(" 0") == true)
        #expect(store.record(id: attack.id == "sm-1" ? "note-1" : "sm-1") != nil)
        // Every way of reading it agrees.
        #expect(
            store.all(Sample.self).map(\.id.rawValue)
                == (attack.id == "sm-1"
                    ? ["sm-0", "sm-2", "sm-nul\u{0}id"] : ["sm-0", "sm-1", "sm-2", "sm-nul\u{0}id"]))
        #expect(store.contains(attack.id))
    }

    /// What a response may hold, a file holds: fields nested as deep as the parser allows, empty
    /// keys, keys and strings with NUL, a key given twice, read back after a reopen as the
    /// in-memory store reads them, and `verify` finds nothing wrong.
    @Test func everythingAResponseMayHoldRoundTripsAndVerifies() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let depth = JSONLimits.default.maxDepth
        let deep = String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1)
        // The record's object at the top of the document: nested as deep as the parser allows.
        let deepResponse = bytes(#"{"uuid":"note-deep","a":\#(deep)}"#)
        let response = bytes(
            #"""
            [{"uuid":"note-keys","":1,"k\u0000":"v\u0000","a":1,"a":2,"\u0000":{"":[""]}},
             {"uuid":"sm-twice","text":"first","text":"second","int":1,"int":2}]
            """#)
        let memory = Store(registry: try sampleRegistry())
        try memory.ingest(deepResponse, taskID: "deep")
        try memory.ingest(response, taskID: "keys")
        do {
            let persistence = try SQLitePersistence(path: path)
            let store = Store(registry: try sampleRegistry(), persistence: persistence)
            try store.ingest(deepResponse, taskID: "deep")
            try store.ingest(response, taskID: "keys")
            persistence.close()
        }
        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        defer { persistence.close() }
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(try persistence.verify().isOK)
        #expect(fingerprint(store) == fingerprint(memory))
        #expect(store.record(id: "note-deep") != nil)
        #expect(store.record(id: "note-keys")?.fields[""] == .number(JSONNumber(1)))
        #expect(store.record(id: "note-keys")?.fields["k\u{0}"] == .string("v\u{0}"))
        #expect(
            store.record(id: "sm-twice")?.entity(as: Sample.self)?.text
                == memory.entity(EntityID<Sample>("sm-twice"))?.text)
        #expect(store.lastPersistenceError == nil)
    }
}

/// Records the store could not read back are refused when written, never kept unreadable.
@Suite("SQLite record format depth on write")
struct RecordFormatDepthTests {
    /// `[[…[1]…]]`, `depth` arrays deep.
    static func nestedArrays(_ depth: Int) -> JSONValue {
        var value = JSONValue.number(JSONNumber(1))
        for _ in 0..<depth { value = .array([value]) }
        return value
    }

    /// A commit of a record nested deeper than a record may be (an app's own value, or an
    /// ingest whose parser allows more) fails typed and writes nothing; one at the limit is
    /// written and reads back.
    @Test func aRecordNestedDeeperThanTheFormatKeepsIsRefusedWhole() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let limit = JSONLimits.default.maxDepth
        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        defer { persistence.close() }
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        try store.ingest(bytes(#"{"uuid":"note-0","a":1}"#))

        var deep = StoreChange()
        deep.upsert(id: "note-1", fields: ["a": .number(JSONNumber(1))])
        deep.upsert(id: "note-deep", fields: ["a": Self.nestedArrays(limit)])
        let error = #expect(throws: StoreWriteError.self) { try store.commit(deep) }
        #expect(error?.code == .persistence)
        let underlying = error?.underlying as? SQLiteStoreError
        #expect(underlying?.code == .unstorable)
        #expect(underlying?.message.contains("note-deep") == true)
        #expect(store.allIDs() == ["note-0"])
        #expect(try persistence.loadRecord(id: "note-1") == nil)

        // An ingest whose parser allows deeper documents: the same refusal, typed.
        var options = IngestOptions()
        options.parser.limits.maxDepth = limit + 10
        let document =
            #"{"uuid":"note-2","a":"# + String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
            + "}"
        let ingestError = #expect(throws: IngestError.self) { try store.ingest(bytes(document), options: options) }
        #expect(ingestError?.code == .persistence)
        #expect((ingestError?.underlying as? SQLiteStoreError)?.code == .unstorable)
        #expect(store.allIDs() == ["note-0"])

        // At the limit: the fields' object and 511 arrays.
        var atLimit = StoreChange()
        atLimit.upsert(id: "note-limit", fields: ["a": Self.nestedArrays(limit - 1)])
        try store.commit(atLimit)
        #expect(store.record(id: "note-limit")?.fields["a"] == Self.nestedArrays(limit - 1))
        #expect(store.lastPersistenceError == nil)
        #expect(try persistence.verify().isOK)
    }
}

/// Values a typed entity may hold that JSON cannot: what a store file does with them.
@Suite("SQLite record format non-finite numbers")
struct RecordFormatNonFiniteTests {
    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func aRecordHoldingANonFiniteDoubleIsRefusedNotLostAtTheNextLoad(_ value: Double) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        defer { persistence.close() }
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        var sample = Sample(id: EntityID<Sample>("sm-1"))
        sample.text = "kept"
        sample.double = value
        // Stored, it would read back as `null`, which a `Double` field cannot decode: the record
        // would be lost at the next load. The commit is refused instead, typed.
        let error = #expect(throws: StoreWriteError.self) { try store.upsert(sample) }
        #expect(error?.code == .persistence)
        let underlying = error?.underlying as? SQLiteStoreError
        #expect(underlying?.code == .unstorable)
        #expect(underlying?.message.contains("sm-1") == true)
        #expect(store.allIDs() == [])
        #expect(try persistence.loadRecord(id: "sm-1") == nil)
        // A Decimal that is no number either.
        var decimal = Sample(id: EntityID<Sample>("sm-2"))
        decimal.decimal = .nan
        let decimalError = #expect(throws: StoreWriteError.self) { try store.upsert(decimal) }
        #expect((decimalError?.underlying as? SQLiteStoreError)?.code == .unstorable)
        #expect(store.allIDs() == [])
        // A finite value is kept and reads back.
        sample.double = -0.0
        try store.upsert(sample)
        #expect(store.entity(EntityID<Sample>("sm-1"))?.text == "kept")
        #expect(store.entity(EntityID<Sample>("sm-1"))?.double.sign == .minus)
        #expect(store.lastPersistenceError == nil)
    }
}

/// Dates far from now, which an app may hold: what a store file gives back.
@Suite("SQLite record format dates")
struct RecordFormatDateTests {
    static func store(_ path: String) throws -> (SQLitePersistence, Store) {
        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        return (persistence, Store(registry: try sampleRegistry(), persistence: persistence))
    }

    /// 10000-01-01T00:00:00Z and 0000-01-01T00:00:00Z, in seconds since 1970.
    static let end = 253_402_300_800.0
    static let first = -62_167_219_200.0
    /// The reach of a time zone offset the decoder reads, `±99:59`.
    static let reach = Double(99 * 3600 + 59 * 60)

    /// Years 0 to 9999, to the microsecond, read back; and so do dates a response's time zone
    /// offset takes past them (`9999-12-31T23:59:59-05:00` is in year 10000 in UTC).
    @Test(arguments: [
        Date.distantPast, Date.distantFuture, Date(timeIntervalSince1970: end - 0.001),
        Date(timeIntervalSince1970: first), Date(timeIntervalSince1970: 0.000_123),
        Date(timeIntervalSince1970: -0.5), Date(timeIntervalSince1970: end), Date(timeIntervalSince1970: end + 0.25),
        Date(timeIntervalSince1970: end + 5 * 3600 - 1), Date(timeIntervalSince1970: end + reach - 0.5),
        Date(timeIntervalSince1970: first - 1), Date(timeIntervalSince1970: first - 0.000_001),
        Date(timeIntervalSince1970: first - reach),
    ])
    func aDateThatISOTextCanCarryReadsBack(_ date: Date) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let (persistence, store) = try Self.store(path)
        defer { persistence.close() }
        var sample = Sample(id: EntityID<Sample>("sm-1"))
        sample.date = date
        try store.upsert(sample)
        let back = try #require(store.entity(EntityID<Sample>("sm-1"))?.date)
        #expect(abs(back.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_001)
        #expect(store.lastPersistenceError == nil)
    }

    /// Dates ISO 8601 text of four-digit years cannot carry at any offset were stored as text
    /// the date decoder refuses, and the record was lost at the next load (or, not finite,
    /// crashed the commit): the commit is refused instead. (In seconds since 1970: Foundation
    /// cannot describe the last three as dates.)
    @Test(
        arguments: [end + reach + 60, 1e12, first - reach - 60, -1e11, 1e300, .infinity, .nan] as [Double])
    func aDateOutsideTheYears0To9999IsRefusedNotLostAtTheNextLoad(_ seconds: Double) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let (persistence, store) = try Self.store(path)
        defer { persistence.close() }
        var sample = Sample(id: EntityID<Sample>("sm-1"))
        sample.date = Date(timeIntervalSince1970: seconds)
        let error = #expect(throws: StoreWriteError.self) { try store.upsert(sample) }
        #expect((error?.underlying as? SQLiteStoreError)?.code == .unstorable)
        #expect(store.allIDs() == [])
        #expect(try persistence.loadRecord(id: "sm-1") == nil)
    }

    /// A server's date at the end of year 9999 in its own zone: ingested, stored, read back.
    @Test func aResponsesDateThatItsOffsetTakesIntoYear10000ReadsBack() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let response = bytes(
            #"[{"uuid":"sm-1","date":"9999-12-31T23:59:59.5-05:00"},{"uuid":"sm-2","date":"0000-01-01T00:00:00+14:00"}]"#
        )
        let memory = Store(registry: try sampleRegistry())
        try memory.ingest(response)
        let (persistence, store) = try Self.store(path)
        defer { persistence.close() }
        try store.ingest(response)
        for id in ["sm-1", "sm-2"] {
            let expected = try #require(memory.entity(EntityID<Sample>(id))?.date)
            #expect(store.entity(EntityID<Sample>(id))?.date == expected)
        }
        #expect(store.lastPersistenceError == nil)
        #expect(try persistence.verify().isOK)
    }
}
