import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB

extension SyncContext {
    /// Sends one write of a push, or takes its answer from a batch, and reads the answer as JSON
    /// (``ResponseConsumption/json(limit:)``): nothing reaches the store until
    /// ``commitAnswers(_:engine:)`` settles it.
    func exchange(
        _ engine: TableEngine, _ method: HTTPMethod, _ path: String, body: [UInt8]?, headers: HTTPHeaders,
        prepared: BatchAnswer?
    ) async throws(TableError<JSONObject>) -> WriteAnswer {
        if let prepared {
            guard (200..<300).contains(prepared.status) else {
                throw engine.mapped(
                    HTTPError(
                        .status, "the server answered \(prepared.status)", method: method, endpoint: path,
                        status: prepared.status, body: prepared.errorBody))
            }
            return WriteAnswer(status: prepared.status, row: prepared.row)
        }
        let result: HTTPResult
        do {
            result = try await session.send(method, path, body: body, headers: headers, consuming: .json())
        } catch {
            throw engine.mapped(error)
        }
        return try answer(result, engine, method, path)
    }

    /// ``exchange(_:_:_:body:headers:prepared:)`` over the network within `deadline` seconds:
    /// nil when it passed first (the request is then cancelled, and not waited for).
    func exchange(
        _ engine: TableEngine, _ method: HTTPMethod, _ path: String, body: [UInt8]?, headers: HTTPHeaders,
        deadline: TimeInterval
    ) async throws(TableError<JSONObject>) -> WriteAnswer? {
        let task = session.launch(method, path, body: body, headers: headers, consuming: .json())
        switch await RequestDeadline.run(deadline, task) {
        case .passed:
            return nil
        case .finished(.failure(let error)):
            throw engine.mapped(error)
        case .finished(.success(let result)):
            return try answer(result, engine, method, path)
        }
    }

    /// A write's answer read as a row.
    private func answer(_ result: HTTPResult, _ engine: TableEngine, _ method: HTTPMethod, _ path: String)
        throws(TableError<JSONObject>) -> WriteAnswer
    {
        switch result.json {
        case .object(let row)?:
            return WriteAnswer(status: result.status, row: row)
        case nil:
            return WriteAnswer(status: result.status, row: nil)
        case let other?:
            // A write's answer that is not a row: applied on the server, not readable here.
            throw engine.failure(
                .invalidResponse, "the server answered \(result.status) to \(method) \(path) with \(other), not a row")
        }
    }

    /// What settling one answer writes, planned from the queue and the store as they are.
    private struct Settlement {
        var operation: SyncOperation
        var behind: [SyncQueue.Later]
        /// The server id a local id became (an insert of a row made offline).
        var serverID: String?
        var version: String?
    }

    /// Settles answered operations of one table in one commit: for each, the row the server
    /// answered with (all of it when nothing is queued behind the operation; only its system
    /// properties when a later change to the row is, and nothing when that change deletes the
    /// row), the operation's removal, and the operations behind it based on the new version. A
    /// row made offline under a local id moves to its server id, with the operations behind it.
    ///
    /// Planned from a snapshot of the queue and checked again inside the commit: a local write
    /// that came in between makes it plan again.
    ///
    /// - Throws: ``SyncError``: the answer holds no row where one is needed, or the store
    ///   cannot be written; nothing is then changed.
    func commitAnswers(
        _ answered: [(operation: SyncOperation, answer: WriteAnswer)], engine: TableEngine
    ) async throws(SyncError) {
        guard !answered.isEmpty else { return }
        // Planned and committed in one trip off the cooperative pool (each trip is two thread
        // wake-ups, and a push settles an answer an operation).
        let renamed = try await offPool { [self] () throws(SyncError) in try settle(answered, engine: engine) }
        // The references in other rows follow (a crash before leaves them resolvable through
        // the remembered id): in a push, those in rows still to be sent now and the rest when
        // the push ends (``PushRenames``); outside one, all of them now.
        guard !renamed.isEmpty else { return }
        let store = session.store
        let renames = Dictionary(renamed.map { ($0.local, $0.server) }, uniquingKeysWith: { _, last in last })
        if let push = PushRenames.current {
            for (local, server) in renames { push.record(local, server) }
            let rows = try await rowsToSend(push)
            await runBlocking { LocalID.rewriteReferences(renames, in: store, ids: rows) }
        } else {
            await runBlocking { LocalID.rewriteReferences(renames, in: store, ids: store.allIDs()) }
        }
    }

    /// ``commitAnswers(_:engine:)``'s planning and commit, blocking: the local ids that became
    /// server ids.
    private func settle(
        _ answered: [(operation: SyncOperation, answer: WriteAnswer)], engine: TableEngine
    ) throws(SyncError) -> [(local: String, server: String)] {
        let versionName = engine.wireName(.version)
        let systemNames = engine.version.systemPropertyNames
        for _ in 0..<8 {
            let operations = answered.map(\.operation)
            let behind: [[SyncQueue.Later]] = try read { db in try SyncQueue.later(db, after: operations) }
            var change = StoreChange()
            var plans: [Settlement] = []
            var renamed: [(local: String, server: String)] = []
            for ((operation, answer), later) in zip(answered, behind) {
                let localStoreID = engine.storeID(operation.itemID)
                var serverID: String?
                if operation.kind == .insert, LocalID.isLocal(operation.itemID) {
                    guard let id = TableEngine.idText(answer.row?["id"]) else {
                        throw SyncError(
                            .http, "the server's answer to the insert of \(operation.itemID) holds no row with an id",
                            table: operation.table)
                    }
                    serverID = id
                    renamed.append((operation.itemID, id))
                }
                let targetStoreID = engine.storeID(serverID ?? operation.itemID)
                var version: String?
                if let name = versionName, case .string(let v)? = answer.row?[name] { version = v }
                if operation.kind != .delete, let row = answer.row {
                    var fields = row
                    fields["id"] = nil
                    let deletedBehind = later.contains { $0.kind == .delete }
                    if later.isEmpty {
                        change.upsert(id: targetStoreID, fields: fields)
                    } else if !deletedBehind, let local = engine.row(localStoreID) {
                        // Only the system properties: the local row holds a later change.
                        var kept = serverID == nil ? JSONObject() : OfflineTable.data(local)
                        for (key, value) in fields.members where systemNames.contains(key) { kept[key] = value }
                        change.upsert(id: targetStoreID, fields: kept)
                    }
                    if serverID != nil, targetStoreID != localStoreID { change.remove(localStoreID) }
                } else if serverID != nil {
                    change.remove(localStoreID)
                }
                plans.append(Settlement(operation: operation, behind: later, serverID: serverID, version: version))
            }
            let planned = plans
            do {
                try commit(change) { db in
                    let now = try SyncQueue.later(db, after: planned.map(\.operation))
                    for (plan, now) in zip(planned, now) {
                        let operation = plan.operation
                        guard now == plan.behind else {
                            throw SyncError(.laterChange, "a later change to row \(operation.itemID) came in")
                        }
                        guard try SyncQueue.remove(db, sequence: operation.sequence) else {
                            throw SyncError(.notFound, "operation \(operation.sequence) left the queue meanwhile")
                        }
                        if operation.kind != .delete {
                            for next in plan.behind {
                                try SyncQueue.setVersion(db, sequence: next.sequence, plan.version)
                            }
                        }
                        if let serverID = plan.serverID {
                            try db.cachedStatement(
                                sql: "INSERT OR REPLACE INTO flatland_sync_local_ids VALUES (?, ?, ?)"
                            )
                            .execute(arguments: [operation.table, operation.itemID, serverID])
                            try db.cachedStatement(
                                sql:
                                    "UPDATE flatland_sync_operations SET item_id = ? WHERE table_name = ? AND item_id = ?"
                            ).execute(arguments: [serverID, operation.table, operation.itemID])
                        }
                    }
                }
            } catch  where error.code == .laterChange {
                continue
            }
            return renamed
        }
        throw SyncError(.store, "the row kept changing locally while its answer was settled")
    }

    /// Drops an operation with `change` to the store, in one commit.
    func commitSettling(_ change: StoreChange, dropping sequence: Int64) async throws(SyncError) {
        try await commitQueued(change) { db in try SyncQueue.remove(db, sequence: sequence) }
    }

    /// The store ids of the rows with queued operations that mention a local id, read once per
    /// push (``PushRenames``).
    private func rowsToSend(_ push: PushRenames) async throws(SyncError) -> Set<String> {
        if let rows = push.rowsToSend { return rows }
        let queued = try await queueRead { db in
            try SyncQueue.operations(db).map { (table: $0.table, itemID: $0.itemID) }
        }
        let engines = Dictionary(
            Set(queued.map(\.table)).map { ($0, engine(for: $0)) }, uniquingKeysWith: { first, _ in first })
        let store = session.store
        let rows = await runBlocking {
            var rows: Set<String> = []
            for (table, itemID) in queued {
                guard let engine = engines[table] else { continue }
                let id = engine.storeID(itemID)
                if let record = store.record(id: id), LocalID.mentionsLocalID(record.fields) { rows.insert(id) }
            }
            return rows
        }
        push.rowsToSend = rows
        return rows
    }

    /// Rewrites, in one pass over the store, the references to the local ids `push` renamed.
    func rewriteRemainingReferences(_ push: PushRenames) async {
        let renames = push.take()
        guard !renames.isEmpty else { return }
        let store = session.store
        await runBlocking { LocalID.rewriteReferences(renames, in: store, ids: store.allIDs()) }
    }
}
