import Flatland
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Testing

/// The record format of schema version 4: fields in the compact encoding, not JSON text.
@Suite("SQLite record format")
struct RecordFormatTests {
    /// The fixture written by the format before (see `Fixtures/README.md`), copied to a scratch
    /// path.
    static func fixtureCopy() throws -> String {
        let path = Scratch.path()
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        return path
    }

    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/format-v3.sqlite").path

    /// What the format before read back from the fixture, line by line.
    static func fixtureExpectation() throws -> [String] {
        let text = try String(contentsOfFile: fixture + ".expected.txt", encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// Every entity of type `Sample` in a store, by id.
    static func samples(_ store: Store) -> [String: Sample] {
        var samples: [String: Sample] = [:]
        for id in store.allIDs() {
            if let sample = store.record(id: id)?.entity(as: Sample.self) { samples[id] = sample }
        }
        return samples
    }

    /// The `fields` column of every record, by id.
    static func rawFields(_ path: String) throws -> [String: [UInt8]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var fields: [String: [UInt8]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT CAST(id AS BLOB) AS id, fields FROM entities") {
                let id: Data = row["id"]
                let bytes: Data = row["fields"]
                fields[String(decoding: id, as: UTF8.self)] = [UInt8](bytes)
            }
            return fields
        }
    }

    /// 12 records are encoded inline; 1,500, a big batch, by workers while the writer inserts.
    @Test(arguments: [12, 1_500])
    func everyFieldTypeRoundTripsLoadedAndAfterReopen(count: Int) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let response = sampleResponse(count: count)
        let memory = Store(registry: try sampleRegistry())
        try memory.ingest(response, endpoint: "/samples")
        let expected = Self.samples(memory)
        #expect(expected.count == count + 1)
        #expect(expected["sm-nul\u{0}id"]?.text == "its id has a NUL")
        #expect(expected["sm-3"]?.text == "t\u{0}\"q\" \\ \n\t é 漢 🙂 3")

        // No cache: every read decodes the record from the file.
        let options = SQLitePersistence.Options(cacheCapacity: 0)
        do {
            let persistence = try SQLitePersistence(path: path, options: options)
            let store = Store(registry: try sampleRegistry(), persistence: persistence)
            try store.ingest(response, endpoint: "/samples")
            #expect(Self.samples(store) == expected)
            #expect(fingerprint(store) == fingerprint(memory))
            #expect(store.lastPersistenceError == nil)
            persistence.close()
        }
        let persistence = try SQLitePersistence(path: path, options: options)
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(Self.samples(store) == expected)
        #expect(fingerprint(store) == fingerprint(memory))
        #expect(store.record(id: "sm-nul") == nil)
        #expect(store.lastPersistenceError == nil)
        #expect(try persistence.verify().isOK)
        persistence.close()

        // Stored without JSON text: every row in the encoding, its text unescaped.
        let raw = try Self.rawFields(path)
        #expect(raw.count == count + 2)
        #expect(raw.values.allSatisfy { $0.first == 0xF1 })
        let text = Array("t\u{0}\"q\" \\ \n\t é 漢 🙂 3".utf8)
        #expect(
            raw["sm-3"].map { $0.starts(with: [0xF1, 0, 4, 4] + Array("text".utf8) + [5, UInt8(text.count)] + text) }
                == true)
    }

    @Test func aFileOfTheFormatBeforeIsMigratedOnceAndReadsTheSame() throws {
        let path = try Self.fixtureCopy()
        defer { Scratch.remove(path) }
        #expect(try Self.rawFields(path).values.allSatisfy { $0.first == UInt8(ascii: "{") })
        do {
            let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
            #expect(persistence.appliedMigrations == ["v4-record-fields-encoded"])
            #expect(try persistence.schemaVersion() == 4)
            let store = Store(registry: try sampleRegistry(), persistence: persistence)
            #expect(fingerprint(store) == (try Self.fixtureExpectation()))
            #expect(store.lastPersistenceError == nil)
            #expect(try persistence.verify().isOK)
            persistence.close()
        }
        let raw = try Self.rawFields(path)
        #expect(raw.count == 42)
        #expect(raw.values.allSatisfy { $0.first == 0xF1 })
        // Once: a second open finds the file current.
        let persistence = try SQLitePersistence(path: path)
        #expect(persistence.appliedMigrations == [])
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(fingerprint(store) == (try Self.fixtureExpectation()))
        persistence.close()
    }

    @Test(arguments: [1, 20, 41])
    func aMigrationKilledHalfwayLeavesTheOldFileWhole(at hangAt: Int) throws {
        let path = try Self.fixtureCopy()
        defer { Scratch.remove(path) }
        let before = try Self.rawFields(path)
        var sawMigrating = false
        _ = try CrashTests.killChild(["migrate", "--store", path, "--hang-at", "\(hangAt)"]) { line in
            if line == "migrating \(hangAt)" { sawMigrating = true }
            return sawMigrating || line == "migrated"
        }
        #expect(sawMigrating)
        // The old file, as it was: schema 3 (a read-only open cannot upgrade it), every row as
        // written by the format before.
        let error = #expect(throws: SQLiteStoreError.self) {
            _ = try SQLitePersistence(path: path, options: .init(mode: .readOnly))
        }
        #expect(error?.code == .readOnly)
        #expect(try Self.rawFields(path) == before)
        // And it migrates whole on the next open.
        let persistence = try SQLitePersistence(path: path)
        #expect(persistence.appliedMigrations == ["v4-record-fields-encoded"])
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(fingerprint(store) == (try Self.fixtureExpectation()))
        #expect(try persistence.verify().isOK)
        persistence.close()
    }

    /// Damage done to one record's stored fields, and what verify says.
    struct Damage: Sendable, CustomStringConvertible {
        let description: String
        let damage: @Sendable ([UInt8]) -> [UInt8]
    }

    static let damages: [Damage] = [
        Damage(description: "cut short") { Array($0.prefix($0.count / 2)) },
        Damage(description: "one byte more") { $0 + [9] },
        Damage(description: "an unknown token") { _ in [0xF1, 0, 4, 1, 0x61, 42, 1] },
        Damage(description: "a length past the end") { _ in [0xF1, 0, 4, 1, 0x61, 5, 0xFF, 0xFF, 0x7F, 0x61, 1] },
        Damage(description: "ill-formed UTF-8") { _ in [0xF1, 0, 4, 4] + Array("text".utf8) + [5, 2, 0xC3, 0x28, 1] },
        Damage(description: "a number that is not one") { _ in
            [0xF1, 0, 4, 3] + Array("int".utf8) + [6, 2, 0x31, 0x78, 1]
        },
        Damage(description: "a value where a key belongs") { _ in [0xF1, 0, 5, 1, 0x61, 1] },
        Damage(description: "an array left open") { _ in [0xF1, 0, 4, 4] + Array("list".utf8) + [2, 1] },
        Damage(description: "JSON text") { _ in Array(#"{"text":"x"}"#.utf8) },
    ]

    @Test(arguments: damages)
    func damagedFieldsAreFoundByVerifyAndReadAsAbsent(_ damage: Damage) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        do {
            let persistence = try SQLitePersistence(path: path)
            let store = Store(registry: try sampleRegistry(), persistence: persistence)
            try store.ingest(sampleResponse(count: 3), endpoint: "/samples")
            persistence.close()
        }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            let fields = try Data.fetchOne(db, sql: "SELECT fields FROM entities WHERE id = 'sm-1'") ?? Data()
            try db.execute(
                sql: "UPDATE entities SET fields = ? WHERE id = 'sm-1'",
                arguments: [Data(damage.damage([UInt8](fields)))])
        }
        try queue.close()

        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        defer { persistence.close() }
        let report = try persistence.verify()
        #expect(!report.isOK)
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.hasPrefix("record sm-1: its stored fields are damaged") == true)
        #expect(try persistence.verify(quick: true).problems == report.problems)
        // The other records read as they were; this one is absent (JSON text still reads), and
        // never a crash.
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(store.record(id: "sm-0")?.entity(as: Sample.self)?.text.hasSuffix(" 0") == true)
        if damage.description == "JSON text" {
            #expect(store.record(id: "sm-1")?.entity(as: Sample.self)?.text == "x")
        } else {
            #expect(store.record(id: "sm-1") == nil)
            #expect(store.lastPersistenceError != nil)
        }
    }
}
