import Flatland
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The migration to record format 4 attacked: rows of a format-3 file that its code could write
/// but nothing else made, files broken or opened twice while they migrate, migrations killed
/// again and again.
@Suite("SQLite migration to format 4 under attack")
struct MigrationAttackTests {
    /// Adds an untyped record `id` of type `big` with these JSON fields to the format-3 file at
    /// `path`, as the code of format 3 stored one (its present keys, its per-type count).
    static func insertFormat3Record(_ path: String, id: String, json: [UInt8]) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO entities (id, type, class_version, data_version, present, fields)
                    VALUES (?, 'big', 1, NULL, '[]', ?)
                    """,
                arguments: [id, Data(json)])
            try db.execute(
                sql: """
                    INSERT INTO type_counts (type, count) VALUES ('big', 1)
                    ON CONFLICT (type) DO UPDATE SET count = count + 1
                    """)
        }
        // Into the file itself, so that its bytes are all there is.
        try queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }

    /// Values beyond the parser's default limits, which a format-3 file holds when the app
    /// ingested with larger limits or upserted the value itself: the migration must carry them
    /// over, not refuse the whole file.
    struct Oversized: Sendable, CustomStringConvertible {
        let description: String
        let key: String
        let value: JSONValue
    }

    static let oversized: [Oversized] = [
        Oversized(
            description: "a string longer than 64 MiB", key: "s",
            value: .string(String(repeating: "x", count: JSONLimits.default.maxStringLength + 1))),
        Oversized(
            description: "a key longer than 64 KiB",
            key: String(repeating: "k", count: JSONLimits.default.maxKeyLength + 1),
            value: .bool(true)),
        Oversized(
            description: "a number of 1,025 digits", key: "n",
            value: .number(JSONNumber(String(repeating: "9", count: JSONLimits.default.maxNumberLength + 1))!)),
    ]

    @Test(arguments: oversized)
    func aFormat3RecordBeyondTheParsersDefaultLimitsIsMigrated(_ oversized: Oversized) throws {
        let path = try RecordFormatTests.fixtureCopy()
        defer { Scratch.remove(path) }
        var writer = JSONWriter()
        writer.value(.object([oversized.key: oversized.value]))
        try Self.insertFormat3Record(path, id: "big-1", json: writer.bytes)

        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        defer { persistence.close() }
        #expect(persistence.appliedMigrations == ["v4-record-fields-encoded"])
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(store.record(id: "big-1")?.fields[oversized.key] == oversized.value)
        #expect(store.lastPersistenceError == nil)
        #expect(try persistence.verify().isOK)
        // The fixture's own records as before.
        #expect(store.record(id: "sm-7")?.entity(as: Sample.self)?.text.hasSuffix(" 7") == true)
    }

    /// Rows no Flatland wrote as fields: the documented behaviour is a `corrupt` refusal that
    /// rolls the migration back, on every open: the file keeps its schema and every row as it
    /// was, never a half-migrated file. (Its bytes may not: GRDB's pool makes and drops a table
    /// when it opens a WAL file that has no log yet.)
    @Test(arguments: [
        Array("not JSON".utf8), Array("[1,2]".utf8), Array(#""text""#.utf8), Array(#"{"a":1"#.utf8),
        [
            UInt8(ascii: "{"), UInt8(ascii: "\""), 0xC3, 0x28, UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: "1"),
            UInt8(ascii: "}"),
        ],
        Array(String(repeating: "[", count: JSONLimits.default.maxDepth + 1).utf8),
    ])
    func aFormat3RowThatIsNoJSONObjectRefusesTheFileAndLeavesIt(_ fields: [UInt8]) throws {
        let path = try RecordFormatTests.fixtureCopy()
        defer { Scratch.remove(path) }
        try Self.insertFormat3Record(path, id: "big-1", json: fields)
        let before = try RecordFormatTests.rawFields(path)
        for _ in 0..<2 {
            let error = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
            #expect(error?.code == .corrupt)
            #expect(error?.message.contains("big-1") == true)
            #expect(try RecordFormatTests.rawFields(path) == before)
            let queue = try DatabaseQueue(path: path)
            #expect(try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == 3)
            try queue.close()
        }
    }

    /// A second process opening the file while the first migrates it waits for the migration's
    /// transaction and, when it does not end, gets a typed error and changes nothing; once the
    /// first is gone the file migrates whole.
    @Test func aSecondOpenWhileAnotherProcessMigratesWaitsThenFailsTyped() throws {
        let path = try RecordFormatTests.fixtureCopy()
        defer { Scratch.remove(path) }
        let before = try RecordFormatTests.rawFields(path)
        let helper = try MigratingHelper(path: path, hangAt: 20)
        defer { helper.kill() }
        // A read-only open cannot migrate, and says so.
        let readOnly = #expect(throws: SQLiteStoreError.self) {
            _ = try SQLitePersistence(path: path, options: .init(mode: .readOnly))
        }
        #expect(readOnly?.code == .readOnly)
        // A read-write open waits for the write lock (its busy timeout), then fails typed.
        let busy = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
        #expect(busy?.code == .busy)
        helper.kill()
        #expect(try RecordFormatTests.rawFields(path) == before)
        let persistence = try SQLitePersistence(path: path)
        #expect(persistence.appliedMigrations == ["v4-record-fields-encoded"])
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(fingerprint(store) == (try RecordFormatTests.fixtureExpectation()))
        #expect(try persistence.verify().isOK)
        persistence.close()
    }

    /// Killed during the migration, then killed again during the next open's migration at
    /// another record: the file is still the old one, and the third open migrates it whole.
    @Test func aMigrationKilledTwiceStillMigratesWhole() throws {
        let path = try RecordFormatTests.fixtureCopy()
        defer { Scratch.remove(path) }
        let before = try RecordFormatTests.rawFields(path)
        for hangAt in [30, 5] {
            let helper = try MigratingHelper(path: path, hangAt: hangAt)
            helper.kill()
            #expect(try RecordFormatTests.rawFields(path) == before)
        }
        let persistence = try SQLitePersistence(path: path, options: .init(cacheCapacity: 0))
        #expect(persistence.appliedMigrations == ["v4-record-fields-encoded"])
        let store = Store(registry: try sampleRegistry(), persistence: persistence)
        #expect(fingerprint(store) == (try RecordFormatTests.fixtureExpectation()))
        #expect(try persistence.verify().isOK)
        persistence.close()
        #expect(try RecordFormatTests.rawFields(path).values.allSatisfy { $0.first == 0xF1 })
    }
}

/// `FlatlandCrashHelper migrate`, running until it said it is in the middle of the migration
/// (its transaction open, `hangAt` records rewritten), then waiting there until killed.
final class MigratingHelper {
    let process = Process()

    init(path: String, hangAt: Int) throws {
        process.executableURL = productsDirectory.appendingPathComponent("FlatlandCrashHelper")
        process.arguments = ["migrate", "--store", path, "--hang-at", "\(hangAt)"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        #expect(text == "migrating \(hangAt)\n")
    }

    /// Kills it with SIGKILL (once) and waits for it to end.
    func kill() {
        guard process.isRunning else { return }
        #if canImport(Glibc)
            Glibc.kill(process.processIdentifier, SIGKILL)
        #elseif canImport(Darwin)
            Darwin.kill(process.processIdentifier, SIGKILL)
        #endif
        process.waitUntilExit()
    }
}
