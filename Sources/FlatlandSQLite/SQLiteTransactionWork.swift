import Flatland
import GRDB

/// Rows a layer above the store writes in the same SQLite transaction as a commit to the
/// entities: give it to Flatland's `Store.commit(_:alongside:)`.
///
/// The closure runs inside the commit's transaction, after the change's own rows, on the
/// writer's connection. Whatever it writes is committed with the change, or, if it throws (or
/// the process dies before the commit), rolled back with it: the store and its observers then
/// see nothing of the change.
///
/// ```swift
/// var change = StoreChange()
/// change.upsert(editedTodo)
/// try store.commit(change, alongside: SQLiteTransactionWork { db in
///     try db.execute(
///         sql: "INSERT INTO sync_queue (entity, operation) VALUES (?, 'update')",
///         arguments: [editedTodo.id.rawValue])
/// })
/// ```
///
/// Keep the work short and within the database: the store's writer waits for it (readers do
/// not). It must not write to the store it is committing to (that fails with
/// `StoreWriteError.Code.writeInsideCommit`), nor touch the store's own
/// tables (`entities`, `entity_index`, `collections`, `collection_items`, `type_counts`):
/// create tables of its own (`CREATE TABLE IF NOT EXISTS` inside the work is fine).
public struct SQLiteTransactionWork: StoreTransactionWork {
    let body: @Sendable (Database) throws -> Void

    /// Work given the transaction's database connection.
    public init(_ body: @escaping @Sendable (Database) throws -> Void) { self.body = body }
}

/// The work's own error, told apart from SQLite's while the transaction unwinds.
struct TransactionWorkFailure: Error {
    let error: any Error
}
