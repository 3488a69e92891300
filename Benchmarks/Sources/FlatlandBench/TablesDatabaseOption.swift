import ArgumentParser
import FlatlandServer

/// The `--tables-db` option of the table benchmarks (`bench-sync`, `bench-filter`): a
/// `postgres://` URL without `?schema=` (the run makes a schema of its own), or none for a
/// SQLite file in the run's temporary directory.
enum TablesDatabaseOption {
    static let help =
        "Where the server keeps its rows: postgres://USER@HOST:PORT/DATABASE (a fresh schema, dropped afterwards); a SQLite file in a temporary directory by default."

    static func validate(_ url: String?) throws {
        guard let url else { return }
        let lower = url.lowercased()
        guard lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") else {
            throw ValidationError("--tables-db must be a postgres:// URL (SQLite is the default)")
        }
        guard !lower.contains("schema=") else {
            throw ValidationError("--tables-db: the run makes its own schema; give the URL without ?schema=")
        }
    }

    /// PostgreSQL at `url` in the schema `schema`, or `tables.sqlite` in `directory`.
    static func storage(_ url: String?, schema: String, directory: String) -> TableServing.Storage {
        guard let url else { return .sqlite(path: directory + "/tables.sqlite") }
        return .postgres(url: url + (url.contains("?") ? "&" : "?") + "schema=" + schema)
    }
}
