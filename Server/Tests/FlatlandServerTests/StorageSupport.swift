import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// The storages the table server's suites run on: SQLite always, PostgreSQL at the database
/// `FLATLAND_TEST_POSTGRES_URL` names (`scripts/postgres-test-cluster.sh start` gives one). Without
/// that variable the PostgreSQL cases fail, saying how to get one, unless `FLATLAND_NO_POSTGRES=1`
/// leaves them out (and a warning says so).
enum TestStorage: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// The storages to run on.
    static let all: [TestStorage] = {
        guard ProcessInfo.processInfo.environment["FLATLAND_NO_POSTGRES"] == "1" else { return allCases }
        FileHandle.standardError.write(
            Data(
                """
                warning: FLATLAND_NO_POSTGRES=1: the table server's suites run on SQLite only; \
                every PostgreSQL case is SKIPPED (scripts/postgres-test-cluster.sh start gives a database)

                """.utf8))
        return [.sqlite]
    }()

    static let howToGetADatabase = """
        FLATLAND_TEST_POSTGRES_URL is not set: the table server's tests need a PostgreSQL database. Start a \
        throwaway one with `eval "$(scripts/postgres-test-cluster.sh start)"` (stop it with \
        `scripts/postgres-test-cluster.sh stop`), or set FLATLAND_NO_POSTGRES=1 to skip the PostgreSQL cases.
        """

    /// The database the PostgreSQL cases use.
    static func postgresURL() throws -> String {
        try #require(
            ProcessInfo.processInfo.environment["FLATLAND_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 },
            Comment(rawValue: howToGetADatabase))
    }

    /// `url` with its tables in `schema`.
    static func url(_ url: String, schema: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "schema=" + schema
    }

    /// A schema of its own, so that tests run in parallel on one database.
    static func freshSchema() -> String {
        "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// A fresh, empty place for one test's rows: memory (SQLite) or a new schema (PostgreSQL).
    func serving() throws -> TableServing.Storage {
        switch self {
        case .sqlite: .sqlite(path: nil)
        case .postgres: .postgres(url: Self.url(try Self.postgresURL(), schema: Self.freshSchema()))
        }
    }

    /// A fresh storage with `tables` prepared; SQLite on `now` when given.
    func make(
        _ tables: [TableDefinition] = [TableDefinition(name: "todoitem")], now: (@Sendable () -> Int64)? = nil
    ) async throws -> any TableStorage {
        let storage: any TableStorage
        switch try serving() {
        case .sqlite(let path):
            storage = try SQLiteTableStorage(path: path, now: now ?? SQLiteTableStorage.wallClock)
        case .postgres(let url):
            storage = try PostgresTableStorage(url: url, maximumConnections: 4)
        }
        try await storage.prepare(tables)
        return storage
    }
}

extension TableServing {
    /// This configuration on a fresh place of `storage`.
    func on(_ storage: TestStorage) throws -> TableServing {
        var serving = self
        serving.storage = try storage.serving()
        return serving
    }
}

extension SampleServer.Configuration {
    /// This configuration with its tables on a fresh place of `storage`.
    func on(_ storage: TestStorage) throws -> SampleServer.Configuration {
        var configuration = self
        configuration.tables = try tables.on(storage)
        return configuration
    }
}

/// The calls of tests that do not care about owners.
extension TableStorage {
    // The writes without an idempotency key, as most tests make them.
    func insert(_ table: String, id: String, fields: JSONObject, owner: String?) async throws(TableStorageError)
        -> TableRow
    {
        try await insert(table, id: id, fields: fields, owner: owner, idempotency: nil)
    }
    func update(
        _ table: String, id: String, fields: JSONObject, replace: Bool, expectedVersion: Int64?, allowDeleted: Bool,
        owner: String?
    ) async throws(TableStorageError) -> TableRow {
        try await update(
            table, id: id, fields: fields, replace: replace, expectedVersion: expectedVersion,
            allowDeleted: allowDeleted, owner: owner, idempotency: nil)
    }
    func delete(_ table: String, id: String, soft: Bool, expectedVersion: Int64?, owner: String?)
        async throws(TableStorageError) -> TableRow
    {
        try await delete(table, id: id, soft: soft, expectedVersion: expectedVersion, owner: owner, idempotency: nil)
    }
    func undelete(_ table: String, id: String, expectedVersion: Int64?, owner: String?)
        async throws(TableStorageError) -> TableRow
    {
        try await undelete(table, id: id, expectedVersion: expectedVersion, owner: owner, idempotency: nil)
    }
    func insert(_ table: String, id: String, fields: JSONObject) async throws(TableStorageError) -> TableRow {
        try await insert(table, id: id, fields: fields, owner: nil, idempotency: nil)
    }
    func row(_ table: String, id: String) async throws(TableStorageError) -> TableRow? {
        try await row(table, id: id, owner: nil)
    }
    func update(
        _ table: String, id: String, fields: JSONObject, replace: Bool, expectedVersion: Int64?, allowDeleted: Bool
    ) async throws(TableStorageError) -> TableRow {
        try await update(
            table, id: id, fields: fields, replace: replace, expectedVersion: expectedVersion,
            allowDeleted: allowDeleted, owner: nil, idempotency: nil)
    }
    func delete(_ table: String, id: String, soft: Bool, expectedVersion: Int64?) async throws(TableStorageError)
        -> TableRow
    {
        try await delete(table, id: id, soft: soft, expectedVersion: expectedVersion, owner: nil, idempotency: nil)
    }
    func undelete(_ table: String, id: String, expectedVersion: Int64?) async throws(TableStorageError) -> TableRow {
        try await undelete(table, id: id, expectedVersion: expectedVersion, owner: nil, idempotency: nil)
    }
}

/// ``withServer(_:_:)`` with the tables on a fresh place of `storage`.
func withServer<R>(
    on storage: TestStorage,
    _ configuration: SampleServer.Configuration = .init(population: .init(users: 4, sessions: 2)),
    _ body: (SampleServer, Int) async throws -> R
) async throws -> R {
    try await withServer(try configuration.on(storage), body)
}
