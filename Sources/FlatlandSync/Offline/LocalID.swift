import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import GRDB
import Synchronization

/// Local ids for rows whose server assigns the ids (SAP's offline model): a row made offline in
/// such a table is `local-<32 hex>` until its insert is pushed; then the server's id replaces it
/// in the row, in the operations queued after it and in the other rows of the store that refer
/// to it, and the local id keeps resolving to the same row (the push's settling of the insert's
/// answer does it: ``SyncContext/commitAnswers(_:engine:)``).
enum LocalID {
    static let prefix = "local-"

    static func isLocal(_ id: String) -> Bool { id.hasPrefix(prefix) }

    static func make() -> String { prefix + TableRowID.generate() }

    static let schema = """
        CREATE TABLE IF NOT EXISTS flatland_sync_local_ids (
            table_name TEXT NOT NULL, local_id TEXT NOT NULL, server_id TEXT NOT NULL,
            PRIMARY KEY (table_name, local_id)
        )
        """

    static func serverID(_ db: Database, table: String, localID: String) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT server_id FROM flatland_sync_local_ids WHERE table_name = ? AND local_id = ?",
            arguments: [table, localID])
    }

    /// Rewrites every string member equal to `old` (at the top of a row, or in an array there)
    /// to `new`, in every record of the store.
    static func rewriteReferences(from old: String, to new: String, in store: Store) {
        var change = StoreChange()
        for id in store.allIDs() {
            guard let record = store.record(id: id) else { continue }
            var fields = record.fields
            var changed = false
            for (key, value) in record.fields {
                switch value {
                case .string(old):
                    fields[key] = .string(new)
                    changed = true
                case .array(let items) where items.contains(.string(old)):
                    fields[key] = .array(items.map { $0 == .string(old) ? .string(new) : $0 })
                    changed = true
                default: break
                }
            }
            if changed { change.upsert(id: id, fields: fields) }
        }
        if !change.isEmpty { _ = try? store.commit(change) }
    }
}
