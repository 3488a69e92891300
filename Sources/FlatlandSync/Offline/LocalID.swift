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

    /// Whether a row's fields mention a local id (a string member at the top of the row, or in an
    /// array there, with the prefix).
    static func mentionsLocalID(_ fields: JSONObject) -> Bool {
        for (_, value) in fields {
            switch value {
            case .string(let text) where isLocal(text): return true
            case .array(let items):
                for case .string(let text) in items where isLocal(text) { return true }
            default: break
            }
        }
        return false
    }

    /// Rewrites every string member that `renames` names (at the top of a row, or in an array
    /// there) to its new value, in the records `ids` of the store, in one commit.
    static func rewriteReferences(_ renames: [String: String], in store: Store, ids: some Sequence<String>) {
        guard !renames.isEmpty else { return }
        var change = StoreChange()
        for id in ids {
            guard let record = store.record(id: id) else { continue }
            var fields = record.fields
            var changed = false
            for (key, value) in record.fields {
                switch value {
                case .string(let text):
                    if let new = renames[text] {
                        fields[key] = .string(new)
                        changed = true
                    }
                case .array(let items):
                    let mapped = items.map { item -> JSONValue in
                        if case .string(let text) = item, let new = renames[text] { return .string(new) }
                        return item
                    }
                    if mapped != items {
                        fields[key] = .array(mapped)
                        changed = true
                    }
                default: break
                }
            }
            if changed { change.upsert(id: id, fields: fields) }
        }
        if !change.isEmpty { _ = try? store.commit(change) }
    }
}

/// The local ids one push renamed, and the rows it rewrites at once.
///
/// Rewriting the references to a renamed row in every record of the store after each pushed
/// insert cost one pass over the whole store per insert. Within a push, only the rows whose
/// operations are still to be sent need the server's id at once (their bodies are built from
/// them): those that mention a local id are found once, at the push's first rename, and
/// rewritten after each rename. Every other record is rewritten in one pass when the push ends.
/// A crash before that pass leaves the references to local ids, which still resolve
/// (`flatland_sync_local_ids`), as a crash between a rename and its rewrite always did.
final class PushRenames: Sendable {
    /// The renames of the push this task runs, if any.
    @TaskLocal static var current: PushRenames?

    private struct State {
        var rowsToSend: Set<String>?
        var renames: [String: String] = [:]
    }

    private let state = Mutex(State())

    /// The store ids of the rows with queued operations that mention a local id, once found.
    var rowsToSend: Set<String>? {
        get { state.withLock { $0.rowsToSend } }
        set { state.withLock { $0.rowsToSend = newValue } }
    }

    func record(_ local: String, _ server: String) {
        state.withLock { $0.renames[local] = server }
    }

    /// The renames recorded so far, forgotten here.
    func take() -> [String: String] {
        state.withLock { state in
            defer { state.renames = [:] }
            return state.renames
        }
    }
}
