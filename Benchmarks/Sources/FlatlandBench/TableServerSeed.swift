import GRDB

/// Fills a table of the embedded table server straight in its SQLite file, for the benchmarks
/// that need many rows fast (100,000 `POST`s would measure the server's writes instead).
enum TableServerSeed {
    /// Inserts `rows` rows into `table` in one transaction, after the server made its schema
    /// (only its column names are relied on), and moves the server's clock past them as its own
    /// inserts would have: row `i` was written at 2026-01-01T00:00:00Z plus `i` microseconds,
    /// with version `i + 1`.
    static func seed(
        serverFile: String, table: String, rows: Int, id: (Int) -> String, data: (Int) -> String
    ) throws {
        let queue = try DatabaseQueue(path: serverFile)
        let base: Int64 = 1_767_225_600_000_000
        try queue.write { db in
            let insert = try db.makeStatement(
                sql: "INSERT INTO \"tbl_\(table)\" (id, created_at, updated_at, version, deleted, data) "
                    + "VALUES (?, ?, ?, ?, 0, ?)")
            for i in 0..<rows {
                let time = base + Int64(i)
                try insert.execute(arguments: [id(i), time, time, Int64(i + 1), data(i)])
            }
            try db.execute(
                sql: "UPDATE flatland_table_clock SET updated_at = max(updated_at, ?), version = max(version, ?) "
                    + "WHERE id = 1",
                arguments: [base + Int64(rows), Int64(rows)])
        }
        try queue.close()
    }
}
