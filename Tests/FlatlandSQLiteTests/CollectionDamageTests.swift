import Flatland
import FlatlandSQLite
import Foundation
import GRDB
import Testing

/// Damage to a collection's row, written with plain SQL: `verify` names the collection, and a
/// load throws `corrupt` (the store reads it as absent), never a wrong list.
@Suite("SQLite collection damage")
struct CollectionDamageTests {
    struct Damage: Sendable, CustomStringConvertible {
        let description: String
        let sql: String
        var arguments: [Data] = []
    }

    /// `x-1` then `x-é` at positions 0 and 1 of `/e`, as the blob of format 1 stores them.
    static func blob(idBytes: [UInt8], slots: [UInt8]? = nil) -> Data {
        var bytes: [UInt8] = [1, 2, 3] + Array("x-1".utf8) + [UInt8(idBytes.count)] + idBytes
        if let slots { bytes += [1, UInt8(slots.count)] + slots } else { bytes += [0] }
        return Data(bytes)
    }

    static let damages: [Damage] = [
        Damage(description: "a blob cut short", sql: "UPDATE collections SET items = substr(items, 1, 5)"),
        Damage(description: "a blob one byte longer", sql: "UPDATE collections SET items = items || x'00'"),
        Damage(
            description: "a slot past the ids", sql: "UPDATE collections SET items = ?",
            arguments: [blob(idBytes: Array("x-é".utf8), slots: [1, 3])]),
        Damage(
            description: "an id of ill-formed UTF-8", sql: "UPDATE collections SET items = ?",
            arguments: [blob(idBytes: [0x78, 0x2D, 0xC3, 0x28])]),
        Damage(description: "a length other than the blob's", sql: "UPDATE collections SET length = 3"),
        Damage(description: "an unknown kind", sql: "UPDATE collections SET kind = 'page'"),
    ]

    @Test(arguments: damages)
    func damageIsFoundByVerifyAndALoadIsCorrupt(_ damage: Damage) throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        do {
            let persistence = try SQLitePersistence(path: path)
            try Store(persistence: persistence).ingest(
                Array(#"[{"uuid":"x-1"},{"uuid":"x-é"}]"#.utf8), endpoint: "/e", taskID: "task-1")
            persistence.close()
        }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(
                sql: damage.sql + " WHERE display = '/e'",
                arguments: StatementArguments(damage.arguments.map { $0 as any DatabaseValueConvertible }))
            #expect(db.changesCount == 1)
        }
        try queue.close()

        let persistence = try SQLitePersistence(path: path)
        defer { persistence.close() }
        let report = try persistence.verify()
        #expect(report.problems.count == 1)
        #expect(report.problems.first?.hasPrefix("collection ") == true)
        #expect(try persistence.verify(quick: true).problems == report.problems)
        let error = #expect(throws: SQLiteStoreError.self) { _ = try persistence.collection(displayIdentifier: "/e") }
        #expect(error?.code == .corrupt)
        // The other collection reads as it was.
        let store = Store(persistence: persistence)
        #expect(store.collection(displayIdentifier: "task-1")?.items == ["x-1", "x-é"])
        #expect(store.collection(displayIdentifier: "/e") == nil)
        #expect(store.lastPersistenceError != nil)
    }
}
