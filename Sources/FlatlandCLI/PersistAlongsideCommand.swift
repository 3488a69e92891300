import ArgumentParser
import Flatland
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB

/// `flatland persist-alongside` (hidden): commits numbered batches into a store file, each with
/// rows of its own (table `alongside`) written by an ``SQLiteTransactionWork`` in the same
/// transaction, saying after each one that it is committed. The crash test kills it, also while
/// a commit's work is running (`--hang-at`), and checks that each batch left both its entities
/// and its rows, or neither.
struct PersistAlongsideCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "persist-alongside",
        abstract: "Commit numbered batches with rows of their own into a store file (for crash tests).",
        shouldDisplay: false)

    @Option(help: "The SQLite store file.")
    var store: String

    @Option(help: "How many batches.")
    var batches = 1_000_000

    @Option(help: "Items per batch.")
    var items = 100

    @Option(help: "The batch whose work, its rows written, says `inside <k>` and waits forever.")
    var hangAt: Int?

    /// Batch `k`: the counter `cn-counter` at `k` and `items` entities of batch `k`.
    static func change(_ k: Int, items: Int) -> StoreChange {
        var change = StoreChange()
        change.upsert(id: "cn-counter", fields: ["n": .number(JSONNumber(k))])
        for i in 0..<items {
            change.upsert(id: "it-\(k)-\(i)", fields: ["batch": .number(JSONNumber(k))])
        }
        return change
    }

    func run() throws {
        let store = try IngestCommand.openStore(path: store)
        for k in 0..<batches {
            let (items, hangAt) = (self.items, self.hangAt)
            let work = SQLiteTransactionWork { db in
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS alongside (batch INTEGER NOT NULL, i INTEGER NOT NULL)")
                for i in 0..<items {
                    try db.execute(sql: "INSERT INTO alongside (batch, i) VALUES (?, ?)", arguments: [k, i])
                }
                if k == hangAt {
                    FileHandleOutput.standardOutput.write("inside \(k)\n")
                    while true { sleep(60) }
                }
            }
            try store.commit(Self.change(k, items: items), alongside: work)
            FileHandleOutput.standardOutput.write("committed \(k)\n")
        }
    }
}
