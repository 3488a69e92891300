import FlatlandJSON

/// What tests and benchmarks (through FlatlandServerTesting) do to a running server's tables beside the protocol:
/// fill a table fast through its storage, count its rows, and remove a PostgreSQL schema made
/// for one run. Not public: nothing an app does.
extension SampleServer {
    /// Writes `rows` new rows into `table` through the storage, a thousand writes per
    /// transaction, as inserts would (each with its own `updatedAt` and `version`); `data(i)` is
    /// row `i`'s fields as a JSON object.
    package func seedTable(
        _ table: String, rows: Int, id: (Int) -> String, data: (Int) -> String
    ) async throws {
        let api = try tablesAPI()
        var start = 0
        while start < rows {
            var writes: [TableWrite] = []
            for i in start..<min(rows, start + 1000) {
                guard case .object(let fields) = try JSONValue(parsing: data(i)) else {
                    throw TableStorageError(code: .badQuery, message: "row \(i)'s data is not a JSON object")
                }
                writes.append(TableWrite(table: table, id: id(i), kind: .insert(fields: fields)))
            }
            for result in await api.storage.apply(writes) { _ = try result.get() }
            start += writes.count
        }
    }

    /// The live (not deleted) rows of `table`.
    package func rowCount(_ table: String) async throws -> Int {
        let api = try tablesAPI()
        let result = try await api.storage.query(table, TableRowQuery(top: 0, includeCount: true), wire: .v2)
        return result.count ?? 0
    }

    /// Drops the PostgreSQL schema the tables live in, with everything in it (a schema made for
    /// one benchmark run); nothing for SQLite.
    package func dropTablesSchema() async throws {
        guard let storage = try tablesAPI().storage as? PostgresTableStorage else { return }
        try await storage.dropSchema()
    }

    private func tablesAPI() throws -> TableAPI {
        guard let api = api.tables.api else {
            throw TableStorageError(code: .storage, message: "the tables are not open (start the server first)")
        }
        return api
    }
}
