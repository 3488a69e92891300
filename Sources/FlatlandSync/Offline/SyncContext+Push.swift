import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import GRDB
import Synchronization

/// A conflict met by a push: the server refused an operation with 412 or 409.
public struct SyncConflict: Sendable {
    /// The operation.
    public var operation: SyncOperation
    /// The status (412 or 409).
    public var status: Int
    /// The local row (nil for a delete).
    public var localItem: JSONObject?
    /// The server's row, when it sent one.
    public var serverItem: JSONObject?
}

/// How a conflict is settled.
public enum ConflictResolution: Sendable {
    /// Send the local row again, over the server's version.
    case clientWins
    /// Take the server's row locally and drop the operation.
    case serverWins
    /// Drop the operation and the local row.
    case discard
    /// Put this row locally, based on the server's version, and keep the operation for the next
    /// push.
    case replace(JSONObject)
    /// Stop the push; the operation stays.
    case abort
}

/// Decides a conflict.
public typealias ConflictHandler = @Sendable (SyncConflict) async -> ConflictResolution

/// The built-in conflict handlers.
public enum ConflictPolicy {
    /// The local change wins: it is sent again over the server's version.
    public static let clientWins: ConflictHandler = { _ in .clientWins }
    /// The server's row wins: it replaces the local one, and the operation is dropped.
    public static let serverWins: ConflictHandler = { _ in .serverWins }
}

/// What a push did to one operation.
public struct PushOutcome: Sendable, Hashable {
    /// How it ended.
    public enum Result: String, Sendable, Hashable {
        /// The server took it; it left the queue.
        case ok
        /// A conflict nobody resolved: the operation stays, failed, with the server's row.
        case conflict
        /// Another error: the operation stays, failed.
        case error
        /// A conflict the handler settled.
        case resolved
    }

    /// The operation's place in the queue.
    public var sequence: Int64
    /// Its table.
    public var table: String
    /// The row's server id.
    public var id: String
    /// Its kind.
    public var kind: SyncOperation.Kind
    /// The server's status (nil when no answer came).
    public var status: Int?
    /// How it ended.
    public var result: Result
}

/// What a push did.
public struct PushResult: Sendable, Hashable {
    /// One outcome per operation sent, in order.
    public var outcomes: [PushOutcome] = []
    /// Why the push stopped early (a network error, a 401, a cancel, a handler's abort); every
    /// operation not settled stays in the queue.
    public var abortReason: String?

    /// Whether the push stopped early.
    public var aborted: Bool { abortReason != nil }
    /// Whether every operation sent was settled (ok or resolved) and none stopped the push.
    public var succeeded: Bool { !aborted && outcomes.allSatisfy { $0.result == .ok || $0.result == .resolved } }
}

extension SyncContext {
    /// Sends the queue in order: in batches when the server advertises them (see
    /// ``PushOptions``), else one request per operation. Every operation carries its
    /// idempotency key (``SyncOperation/key``), so a server that remembers keys applies a
    /// replayed request once.
    ///
    /// Each success writes the server's answer to the local row in the transaction that drops
    /// the operation. A network error, a 401 or a cancel stops the push and keeps every
    /// operation (those sent as attempted). Other errors are recorded on their operation and the
    /// push goes on. A delete answered 404 or 410 is a success. An insert or an update sent
    /// before whose answer was lost (a 409 or a 412 now) is checked against the server's row
    /// (fetched with a `GET`): the same data is a success, other data a conflict. Conflicts (412, 409) go to
    /// `onConflict`; without one the operation stays, failed, with the server's row.
    ///
    /// In a batch each operation's answer goes through exactly these rules, in queue order; an
    /// operation after one that met a conflict is still applied. A batch that fails as a whole
    /// on the network, with a 401 or a cancel stops the push the same way; any other failure of
    /// the batch request sends its operations one by one.
    public func push(onConflict: ConflictHandler? = nil, options: PushOptions = PushOptions()) async -> PushResult {
        var result = PushResult()
        let telemetry = self.telemetry
        defer { telemetry.pushed(result, context: self) }
        let operations: [SyncOperation]
        do {
            operations = try self.operations()
        } catch {
            result.abortReason = "\(error)"
            return result
        }
        defer { setInFlight(nil) }
        let limit = await batchLimit(options, operations: operations.count)
        var index = 0
        while index < operations.count {
            // A cancel stops the push between operations (one in flight is cancelled with its
            // request, and stays attempted for the next push).
            if Task.isCancelled {
                result.abortReason = "the push was cancelled"
                break
            }
            var run: [SyncOperation] = []
            if let limit {
                while index + run.count < operations.count, run.count < limit,
                    Self.batchable(operations[index + run.count])
                {
                    run.append(operations[index + run.count])
                }
            }
            if run.count > 1 {
                index += run.count
                if let reason = await pushBatch(run, total: operations.count, onConflict: onConflict, into: &result) {
                    result.abortReason = reason
                    break
                }
                continue
            }
            let queued = operations[index]
            index += 1
            // The queue may have changed while earlier operations were sent.
            guard let operation = try? read({ db in try SyncQueue.operation(db, sequence: queued.sequence) })
            else { continue }
            var outcome = PushOutcome(
                sequence: operation.sequence, table: operation.table, id: operation.itemID, kind: operation.kind,
                status: nil, result: .ok)
            let step = await pushOne(operation, onConflict: onConflict, outcome: &outcome, retriesLeft: 1)
            result.outcomes.append(outcome)
            report(.push(sent: result.outcomes.count, total: operations.count))
            if case .abort(let reason) = step {
                result.abortReason = reason
                break
            }
        }
        return result
    }

    /// Sends a run of operations in one batch and settles each answer in order as a single
    /// push would; returns why the push stops, or nil.
    private func pushBatch(
        _ run: [SyncOperation], total: Int, onConflict: ConflictHandler?, into result: inout PushResult
    ) async -> String? {
        // The queue may have changed while earlier operations were sent.
        let current = try? read { db in try SyncQueue.operations(db, sequences: run.map(\.sequence)) }
        guard let current else { return "the operation queue could not be read" }
        do {
            try transaction { db in
                for operation in current { try SyncQueue.setState(db, sequence: operation.sequence, .attempted) }
            }
        } catch {
            return "\(error)"
        }
        for operation in current { setInFlight(operation.sequence) }
        var answers: [String: BatchAnswer] = [:]
        switch await sendBatch(current) {
        case .success(let received):
            answers = received
        case .failure(let error):
            if let http = error.httpError, http.code == .transport || http.code == .cancelled || http.status == 401 {
                for operation in current {
                    result.outcomes.append(
                        PushOutcome(
                            sequence: operation.sequence, table: operation.table, id: operation.itemID,
                            kind: operation.kind, status: http.status, result: .error))
                    report(.push(sent: result.outcomes.count, total: total))
                }
                return http.status == 401 ? "the server answered 401" : http.message
            }
        // Any other failure of the batch as a whole: each operation on its own (its key makes
        // that safe whatever the batch did).
        }
        // The operations as they are now (a local write may have changed one meanwhile).
        let now = try? read { db in try SyncQueue.operations(db, sequences: current.map(\.sequence)) }
        guard let now else { return "the operation queue could not be read" }
        let wasAttempted = Dictionary(current.map { ($0.sequence, $0.state == .attempted) }) { a, _ in a }
        let sentKeys = Dictionary(current.map { ($0.sequence, $0.key) }) { a, _ in a }
        // Plain successes in a row, of one table, are taken in one commit; anything else goes
        // through the rules one by one, in order.
        var plain: [(operation: SyncOperation, answer: BatchAnswer)] = []
        for operation in now {
            let answer = sentKeys[operation.sequence].flatMap { answers[$0] }
            let isPlain =
                answer.map { sentKeys[operation.sequence] == operation.key && Self.isPlainSuccess(operation, $0) }
                ?? false
            if isPlain, let answer, plain.first.map({ $0.operation.table == operation.table }) ?? true {
                plain.append((operation, answer))
                continue
            }
            if let reason = await settle(
                plain, wasAttempted: wasAttempted, total: total, onConflict: onConflict, into: &result)
            {
                return reason
            }
            plain = []
            if isPlain, let answer {
                plain = [(operation, answer)]
                continue
            }
            // Without an answer in the batch it is sent on its own, as it was before the batch.
            if let reason = await settleAlone(
                operation, answer: answer, wasAttempted: wasAttempted[operation.sequence] ?? false, total: total,
                onConflict: onConflict, into: &result)
            {
                return reason
            }
        }
        return await settle(plain, wasAttempted: wasAttempted, total: total, onConflict: onConflict, into: &result)
    }

    /// Whether an answer from a batch needs none of the push's rules beyond taking it: a 2xx
    /// to an insert, an update or a delete.
    static func isPlainSuccess(_ operation: SyncOperation, _ answer: BatchAnswer) -> Bool {
        (200..<300).contains(answer.status) && batchable(operation)
    }

    /// Settles a run of plain successes of one table: the rows the server answered with and
    /// the operations' removal from the queue, in one commit. Should that commit be refused (a
    /// later change to one of the rows queued meanwhile, an answer that cannot be read), nothing
    /// of it is kept and each goes through the rules on its own. Returns why the push stops, or nil.
    private func settle(
        _ plain: [(operation: SyncOperation, answer: BatchAnswer)], wasAttempted: [Int64: Bool], total: Int,
        onConflict: ConflictHandler?, into result: inout PushResult
    ) async -> String? {
        guard !plain.isEmpty else { return nil }
        if (try? commitTogether(plain)) != nil {
            for (operation, answer) in plain {
                result.outcomes.append(
                    PushOutcome(
                        sequence: operation.sequence, table: operation.table, id: operation.itemID,
                        kind: operation.kind, status: answer.status, result: .ok))
                report(.push(sent: result.outcomes.count, total: total))
            }
            return nil
        }
        for (operation, answer) in plain {
            if let reason = await settleAlone(
                operation, answer: answer, wasAttempted: wasAttempted[operation.sequence] ?? false, total: total,
                onConflict: onConflict, into: &result)
            {
                return reason
            }
        }
        return nil
    }

    /// Settles one operation of a batch through the one-by-one rules, with its answer from the
    /// batch (or, without one, by sending it alone); returns why the push stops, or nil.
    private func settleAlone(
        _ operation: SyncOperation, answer: BatchAnswer?, wasAttempted: Bool, total: Int,
        onConflict: ConflictHandler?, into result: inout PushResult
    ) async -> String? {
        var outcome = PushOutcome(
            sequence: operation.sequence, table: operation.table, id: operation.itemID, kind: operation.kind,
            status: nil, result: .ok)
        let step = await pushOne(
            operation, onConflict: onConflict, outcome: &outcome, retriesLeft: 1, prepared: answer,
            wasAttempted: wasAttempted)
        result.outcomes.append(outcome)
        report(.push(sent: result.outcomes.count, total: total))
        if case .abort(let reason) = step { return reason }
        return nil
    }

    /// The rows of plain successes (one table) and the removal of their operations, in one
    /// commit; throws, changing nothing, when a later change to one of the rows is queued.
    private func commitTogether(_ plain: [(operation: SyncOperation, answer: BatchAnswer)]) throws {
        guard let table = plain.first?.operation.table else { return }
        let engine = engine(for: table)
        var options = engine.ingestOptions
        // Answers to writes, not a listing of the table.
        options.updatesEndpointCollection = false
        let v3 = engine.version == .v3
        var bytes: [UInt8] = v3 ? Array(#"{"items":["#.utf8) : [UInt8(ascii: "[")]
        var first = true
        for (operation, answer) in plain where operation.kind != .delete && !answer.body.isEmpty {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes += answer.body
        }
        bytes += v3 ? Array("]}".utf8) : [UInt8(ascii: "]")]
        let ingestor = engine.store.makeIngestor(endpoint: nil, options: options)
        try ingestor.feed(bytes)
        let batch = try ingestor.finish()
        let operations = plain.map(\.operation)
        try engine.store.commit(
            batch,
            alongside: SQLiteTransactionWork { db in
                for operation in operations {
                    try SyncQueue.remove(db, sequence: operation.sequence)
                    if try SyncQueue.hasOperation(
                        db, table: operation.table, itemID: operation.itemID, after: operation.sequence)
                    {
                        throw LaterChangeDuringPush()
                    }
                }
            })
    }

    enum PushStep {
        case next
        case abort(String)
    }

    private func pushOne(
        _ operation: SyncOperation, onConflict: ConflictHandler?, outcome: inout PushOutcome, retriesLeft: Int,
        prepared: BatchAnswer? = nil, wasAttempted: Bool? = nil
    ) async -> PushStep {
        let engine = engine(for: operation.table)
        let sequence = operation.sequence
        let wasAttempted = wasAttempted ?? (operation.state == .attempted)
        // An answer from a batch: the batch marked its operations attempted before it went.
        if prepared == nil {
            do {
                try transaction { db in try SyncQueue.setState(db, sequence: sequence, .attempted) }
            } catch {
                return .abort("\(error)")
            }
        }
        setInFlight(sequence)
        let dropOperation: @Sendable (IngestBatch) throws -> ResponseCommit = { _ in
            ResponseCommit(alongside: SQLiteTransactionWork { db in try SyncQueue.remove(db, sequence: sequence) })
        }
        do {
            guard let request = try request(for: operation, engine: engine) else {
                try? transaction { db in
                    try SyncQueue.recordFailure(
                        db, sequence: sequence, status: nil, serverItem: nil, rawBody: [],
                        error: "the local row is gone")
                }
                outcome.result = .error
                return .next
            }
            var headers: HTTPHeaders = ["Idempotency-Key": operation.key]
            if let ifMatch = request.ifMatch { headers["If-Match"] = ifMatch }
            let path = try engine.rowPath(request.pathID)
            let answer: PushAnswer
            switch operation.kind {
            case .insert, .update:
                if operation.kind == .insert, LocalID.isLocal(operation.itemID) {
                    // Its answer renames the row everywhere in the commit that takes it.
                    let result = try await LocalID.insert(
                        operation.itemID, operation: operation, path: path, body: request.body ?? [], engine: engine,
                        context: self)
                    answer = PushAnswer(status: result.status, committed: result.ingest != nil)
                } else {
                    answer = try await sendRow(
                        operation, method: request.method, path: path, body: request.body ?? [], headers: headers,
                        engine: engine, prepared: prepared)
                }
            case .delete:
                answer = try await exchange(
                    engine, .delete, path, body: nil, headers: headers, condition: { _ in false },
                    commitPlan: dropOperation, prepared: prepared)
            }
            outcome.status = answer.status
            if !answer.committed {
                // No body (a 204): nothing was committed with it.
                try transaction { db in try SyncQueue.remove(db, sequence: sequence) }
            }
            outcome.result = .ok
            return .next
        } catch let error as TableError<JSONObject> {
            outcome.status = error.status
            return await handle(
                error, operation: operation, engine: engine, wasAttempted: wasAttempted, onConflict: onConflict,
                outcome: &outcome, retriesLeft: retriesLeft)
        } catch {
            return .abort("\(error)")
        }
    }

    /// A change to the row queued behind the operation while the operation was on its way:
    /// the answer's commit steps back rather than write over it.
    struct LaterChangeDuringPush: Error {}

    /// Sends an insert or an update. When a later change to the row is queued behind it (made
    /// while this one was on its way), the server's answer does not overwrite the local row:
    /// only its system properties are taken, and the later operations are based on the new
    /// version. Checked when the answer arrives and again inside its commit.
    private func sendRow(
        _ operation: SyncOperation, method: HTTPMethod, path: String, body: [UInt8], headers: HTTPHeaders,
        engine: TableEngine, prepared: BatchAnswer?
    ) async throws(TableError<JSONObject>) -> PushAnswer {
        let sequence = operation.sequence
        let table = operation.table
        let item = operation.itemID
        let names = engine.version.systemPropertyNames
        let versionName = engine.wireName(.version)
        let held = Mutex<(held: Bool, system: JSONObject)>((false, [:]))
        let laterOperations: @Sendable (Database) throws -> [SyncOperation] = { db in
            try SyncQueue.operations(db, table: table, itemID: item).filter { $0.sequence > sequence }
        }
        let answer = try await exchange(
            engine, method, path, body: body, headers: headers,
            condition: { [self] entity in
                let fields = entity.untypedFields ?? entity.fields
                let system = JSONObject(fields.members.filter { names.contains($0.key) })
                let later = (try? read { db in !(try laterOperations(db)).isEmpty }) ?? false
                held.withLock { $0 = (later, system) }
                return !later
            },
            commitPlan: { _ in
                let (wasHeld, system) = held.withLock { $0 }
                let version = versionName.flatMap { name -> String? in
                    if case .string(let v)? = system[name] { return v }
                    return nil
                }
                return ResponseCommit(
                    alongside: SQLiteTransactionWork { db in
                        try SyncQueue.remove(db, sequence: sequence)
                        let later = try laterOperations(db)
                        guard !later.isEmpty else { return }
                        if !wasHeld { throw LaterChangeDuringPush() }
                        for next in later { try SyncQueue.setVersion(db, sequence: next.sequence, version) }
                    })
            }, prepared: prepared)
        let (wasHeld, system) = held.withLock { $0 }
        if wasHeld, system.count > 0 {
            var change = StoreChange()
            change.upsert(id: engine.storeID(item), fields: system)
            _ = try? session.store.commit(change)
        }
        return answer
    }

    private func handle(
        _ error: TableError<JSONObject>, operation: SyncOperation, engine: TableEngine, wasAttempted: Bool,
        onConflict: ConflictHandler?, outcome: inout PushOutcome, retriesLeft: Int
    ) async -> PushStep {
        let sequence = operation.sequence
        // The network, a cancel, or a 401: nothing more can go through now.
        if error.code == .http, let http = error.httpError,
            http.code == .transport || http.code == .cancelled || http.status == 401
        {
            outcome.result = .error
            return .abort(http.status == 401 ? "the server answered 401" : http.message)
        }
        if let http = error.httpError, SyncContext.chain(of: http).contains(where: { $0 is LaterChangeDuringPush }) {
            // Applied on the server, not taken locally: left attempted, so the next push checks
            // the server's row against the local one.
            outcome.result = .error
            return .next
        }
        if operation.kind == .delete, error.code == .notFound || error.code == .gone {
            try? transaction { db in try SyncQueue.remove(db, sequence: sequence) }
            outcome.result = .ok
            return .next
        }
        guard error.code == .preconditionFailed || error.code == .conflict else {
            record(error, sequence: sequence)
            outcome.result = .error
            return .next
        }
        var serverItem = error.serverItemJSON
        if wasAttempted, operation.kind == .insert || operation.kind == .update {
            // The first attempt may have been committed with its answer lost (a POST answered 409
            // now, a PATCH whose If-Match its own write made stale): the error's body proves
            // nothing, the server's row does.
            if let fetched = await fetch(operation.itemID, engine: engine) {
                let local = engine.row(engine.storeID(operation.itemID))
                if let local, OfflineTable.sameData(local, fetched) {
                    if (try? adopt(fetched, engine: engine, dropping: sequence)) != nil {
                        outcome.result = .ok
                        return .next
                    }
                }
                serverItem = fetched
            }
        }
        let conflict = SyncConflict(
            operation: operation, status: error.status ?? 0,
            localItem: operation.kind == .delete ? operation.item : engine.row(engine.storeID(operation.itemID)),
            serverItem: serverItem)
        guard let onConflict else {
            record(error, sequence: sequence, serverItem: serverItem)
            outcome.result = .conflict
            return .next
        }
        let serverVersion = serverItem.flatMap { item -> String? in
            guard let name = engine.wireName(.version), case .string(let v)? = item[name] else { return nil }
            return v
        }
        switch await onConflict(conflict) {
        case .abort:
            record(error, sequence: sequence, serverItem: serverItem)
            outcome.result = .conflict
            return .abort("the conflict handler stopped the push at operation \(sequence)")
        case .serverWins:
            guard let serverItem, (try? adopt(serverItem, engine: engine, dropping: sequence)) != nil else {
                record(error, sequence: sequence, serverItem: serverItem)
                outcome.result = .conflict
                return .next
            }
            outcome.result = .resolved
            return .next
        case .discard:
            var change = StoreChange()
            change.remove(engine.storeID(operation.itemID))
            try? commit(change) { db in try SyncQueue.remove(db, sequence: sequence) }
            outcome.result = .resolved
            return .next
        case .replace(let row):
            var change = StoreChange()
            var fields = OfflineTable.data(row)
            if let name = engine.wireName(.version), let serverVersion { fields[name] = .string(serverVersion) }
            change.upsert(id: engine.storeID(operation.itemID), fields: fields)
            let kind: SyncOperation.Kind = operation.kind == .insert ? .update : operation.kind
            try? commit(change) { db in
                try SyncQueue.collapse(db, sequence: sequence, kind: kind, version: serverVersion, item: operation.item)
                try SyncQueue.setState(db, sequence: sequence, .pending)
            }
            outcome.result = .resolved
            return .next
        case .clientWins:
            guard retriesLeft > 0, serverVersion != nil || operation.kind != .insert else {
                record(error, sequence: sequence, serverItem: serverItem)
                outcome.result = .conflict
                return .next
            }
            // Over the server's version: an insert of a row the server has becomes an update.
            let kind: SyncOperation.Kind = operation.kind == .insert ? .update : operation.kind
            try? transaction { db in
                try SyncQueue.collapse(db, sequence: sequence, kind: kind, version: serverVersion, item: operation.item)
            }
            guard let again = try? read({ db in try SyncQueue.operation(db, sequence: sequence) }) else {
                return .next
            }
            let step = await pushOne(again, onConflict: nil, outcome: &outcome, retriesLeft: retriesLeft - 1)
            if outcome.result == .ok { outcome.result = .resolved }
            return step
        }
    }

    /// Records a failed attempt on its operation.
    private func record(_ error: TableError<JSONObject>, sequence: Int64, serverItem: JSONObject? = nil) {
        let item = serverItem ?? error.serverItemJSON
        try? transaction { db in
            try SyncQueue.recordFailure(
                db, sequence: sequence, status: error.status, serverItem: item, rawBody: error.body,
                error: error.message)
        }
    }

    /// The server's row, read without touching the store.
    private func fetch(_ id: String, engine: TableEngine) async -> JSONObject? {
        let seen = Mutex<JSONObject?>(nil)
        do {
            _ = try await engine.send(
                .get, try engine.rowPath(id),
                condition: { entity in
                    if let fields = entity.untypedFields {
                        var row: JSONObject = ["id": .string(id)]
                        for (key, value) in fields where key != "id" { row[key] = value }
                        seen.withLock { $0 = row }
                    }
                    return false
                })
        } catch {
            return nil
        }
        return seen.withLock { $0 }
    }

    /// Puts the server's row in place of the local one and drops the operation, in one commit.
    private func adopt(_ serverItem: JSONObject, engine: TableEngine, dropping sequence: Int64) throws(SyncError) {
        var fields = serverItem
        fields["id"] = nil
        var change = StoreChange()
        change.upsert(id: engine.storeID(TableEngine.idText(serverItem["id"]) ?? ""), fields: fields)
        try commit(change) { db in try SyncQueue.remove(db, sequence: sequence) }
    }
}

extension OfflineTable {
    /// Whether two rows hold the same data members (order aside; system properties and ids aside).
    static func sameData(_ a: JSONObject, _ b: JSONObject) -> Bool {
        let x = data(a)
        let y = data(b)
        guard x.count == y.count else { return false }
        return x.allSatisfy { y[$0.key] == $0.value }
    }
}
