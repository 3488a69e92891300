import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Synchronization

/// A conflict met by a push: the server refused an operation with 412 or 409, or an update or
/// a delete found the row gone (404, 410).
public struct SyncConflict: Sendable {
    /// The operation.
    public var operation: SyncOperation
    /// The status (412, 409, 404 or 410).
    public var status: Int
    /// The local row (nil for a delete).
    public var localItem: JSONObject?
    /// The server's row, when it sent one (never for 404 and 410: it has none).
    public var serverItem: JSONObject?
}

/// How a conflict is settled.
public enum ConflictResolution: Sendable {
    /// Send the local row again, over the server's version; a row the server no longer has
    /// (404, 410) is inserted again under its id.
    case clientWins
    /// Take the server's row locally and drop the operation; a row the server no longer has
    /// is removed locally.
    case serverWins
    /// Drop the operation and the local row, with the inserts and updates of the row queued
    /// behind it (a delete behind it still goes).
    case discard
    /// Put this row locally, based on the server's version, and keep the operation for the next
    /// push (an insert, for a row the server no longer has).
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
        /// An insert whose answer was lost and that cannot be sent again without risking a
        /// second row: held, uncertain, until the app settles it (``SyncContext/settle(_:_:)``).
        case uncertain
    }

    /// The operation's place in the queue.
    public var sequence: Int64
    /// Its table.
    public var table: String
    /// The row's server id.
    public var id: String
    /// Its kind.
    public var kind: SyncOperation.Kind
    /// The server's status (nil when no answer came, and for an ``Result/ok`` that had nothing
    /// to send: a write whose row was deleted locally meanwhile, settled by the delete behind it).
    public var status: Int?
    /// How it ended.
    public var result: Result

    /// Whether the operation left the queue settled (ok or resolved).
    var settles: Bool { result == .ok || result == .resolved }
}

/// What a push did.
public struct PushResult: Sendable, Hashable {
    /// One outcome per operation sent (or held uncertain), in order.
    public var outcomes: [PushOutcome] = []
    /// Why the push stopped early (a network error, a 401, a cancel, a handler's abort, a queue
    /// row this version does not know); every operation not settled stays in the queue.
    public var abortReason: String?

    /// Whether the push stopped early.
    public var aborted: Bool { abortReason != nil }
    /// Whether every operation sent was settled (ok or resolved) and none stopped the push.
    public var succeeded: Bool { !aborted && outcomes.allSatisfy { $0.result == .ok || $0.result == .resolved } }
}

/// A write's answer, as the push reads it: its status and its row (nil for a body-less answer).
struct WriteAnswer: Sendable {
    var status: Int
    var row: JSONObject?
}

extension SyncContext {
    /// Sends the queue in order: in batches when the server advertises them (see
    /// ``PushOptions``), else one request per operation. Every operation carries its
    /// idempotency key (``SyncOperation/key``), so a server that remembers keys applies a
    /// replayed request once.
    ///
    /// Each operation is marked sending (``SyncOperation/State/attempted``) in the queue before
    /// its request goes; a local write to its row meanwhile is queued behind it. Each success
    /// is one commit: the server's answer written to the local row (only its system properties
    /// when a later change to the row is queued: never over that change), the operation dropped,
    /// and the operations behind it based on the new version. A network error, a 401 or a cancel
    /// stops the push and keeps every operation. Other errors are recorded on their operation
    /// and the push goes on; the operations of that row behind the one that failed wait for a
    /// later push (they are based on it). A delete answered 404 or 410 is a success; an update answered 404
    /// or 410 is a conflict (the row is gone on the server). An insert or an update sent before
    /// whose answer was lost (a 409 or a 412 now) is checked against the server's row (fetched
    /// with a `GET`): the same data is a success, other data a conflict. Conflicts go to
    /// `onConflict`; without one the operation stays, failed, with the server's row.
    ///
    /// An insert whose server assigns the id and whose answer was lost is sent again only when
    /// the server advertises idempotency keys (`$capabilities`); otherwise it is held as
    /// ``SyncOperation/State/uncertain`` (an outcome ``PushOutcome/Result/uncertain``, every
    /// push, until ``settle(_:_:)``), and the operations of its row wait behind it.
    ///
    /// In a batch each operation's answer goes through exactly these rules, in queue order; an
    /// operation after one that met a conflict is still applied. A batch that fails as a whole
    /// on the network, with a 401 or a cancel stops the push the same way; any other failure of
    /// the batch request sends its operations one by one.
    public func push(onConflict: ConflictHandler? = nil, options: PushOptions = PushOptions()) async -> PushResult {
        // The references to the local ids this push renames: in the rows still to be sent at
        // once, in every other record in one pass at the end (``PushRenames``).
        let renames = PushRenames()
        let result = await PushRenames.$current.withValue(renames) {
            await pushQueued(onConflict: onConflict, options: options)
        }
        await rewriteRemainingReferences(renames)
        return result
    }

    private func pushQueued(onConflict: ConflictHandler?, options: PushOptions) async -> PushResult {
        var result = PushResult()
        let telemetry = self.telemetry
        defer { telemetry.pushed(result, context: self) }
        let deadline = options.requestDeadline
        guard RequestDeadline.isValid(deadline) else {
            result.abortReason = "the request deadline is \(deadline) s, not between 0 and a day"
            return result
        }
        let operations: [SyncOperation]
        do {
            operations = try await queueRead { db in try SyncQueue.operations(db) }
        } catch {
            result.abortReason = "\(error)"
            return result
        }
        let limit = await batchLimit(options, operations: operations.count)
        var index = 0
        // Rows with an operation this push did not settle (failed, a conflict left, uncertain):
        // the operations behind it wait, as they would behind one still being sent (an update
        // behind a failed insert would reach a row the server does not have).
        var waiting: Set<RowKey> = []
        while index < operations.count {
            // A cancel stops the push between operations (one in flight is cancelled with its
            // request, and stays attempted for the next push).
            if Task.isCancelled {
                result.abortReason = "the push was cancelled"
                break
            }
            var run: [SyncOperation] = []
            if let limit {
                // A run holds one operation per row: one behind another of its row is based on
                // the version the earlier one's answer brings, so it goes in a later run.
                var rows: Set<RowKey> = []
                while index + run.count < operations.count, run.count < limit,
                    Self.batchable(operations[index + run.count]),
                    !waiting.contains(RowKey(operations[index + run.count])),
                    rows.insert(RowKey(operations[index + run.count])).inserted
                {
                    run.append(operations[index + run.count])
                }
            }
            if run.count > 1 {
                index += run.count
                let settled = result.outcomes.count
                let reason = await pushBatch(
                    run, total: operations.count, onConflict: onConflict, deadline: deadline, into: &result)
                for outcome in result.outcomes[settled...] where !outcome.settles {
                    waiting.insert(RowKey(outcome))
                }
                if let reason {
                    result.abortReason = reason
                    break
                }
                continue
            }
            let queued = operations[index]
            index += 1
            // The queue may have changed while earlier operations were sent. Read as it is now,
            // and, when what to do needs nothing from the server (nearly always), marked sending
            // in the same transaction: one trip off the cooperative pool, not two.
            let opening: Opening
            do {
                let held = waiting
                opening = try await queueWrite { [self] db in
                    guard let operation = try SyncQueue.operation(db, sequence: queued.sequence),
                        !Self.waitsForItsInsert(operation), !held.contains(RowKey(operation))
                    else { return .skipped }
                    guard case .send(let replay) = OperationLifecycle.action(for: operation, serverHonoursKeys: false)
                    else { return .asks(operation) }
                    let engine = engine(for: operation.table)
                    return .marked(
                        operation, replay: replay, try markSending(operation, db, engine: engine, replay: replay),
                        engine)
                }
            } catch {
                result.abortReason = "\(error)"
                break
            }
            let operation: SyncOperation
            var marked: (replay: Bool, sending: Result<Sending?, TableError<JSONObject>>, engine: TableEngine)?
            switch opening {
            case .skipped: continue
            case .asks(let read): operation = read
            case .marked(let read, let replay, let sending, let engine):
                operation = read
                marked = (replay, sending, engine)
            }
            var outcome = PushOutcome(
                sequence: operation.sequence, table: operation.table, id: operation.itemID, kind: operation.kind,
                status: nil, result: .ok)
            let step: PushStep
            let action: Result<OperationLifecycle.Action, PushStop> =
                if let marked { .success(.send(replay: marked.replay)) } else {
                    await self.action(for: operation, deadline: deadline)
                }
            switch action {
            case .failure(let reason):
                result.abortReason = "\(reason)"
                return result
            case .success(.skip):
                outcome.result = .uncertain
                step = .next
            case .success(.holdUncertain):
                do {
                    try await queueWrite { db in try SyncQueue.apply(.held, db, sequence: operation.sequence) }
                } catch {
                    result.abortReason = "\(error)"
                    return result
                }
                outcome.result = .uncertain
                step = .next
            case .success(.send(let replay)):
                step = await pushOne(
                    operation, replay: replay, onConflict: onConflict, deadline: deadline, outcome: &outcome,
                    retriesLeft: 1, marked: marked.map { ($0.sending, $0.engine) })
            }
            result.outcomes.append(outcome)
            if !outcome.settles { waiting.insert(RowKey(outcome)) }
            report(.push(sent: result.outcomes.count, total: operations.count))
            if case .abort(let reason) = step {
                result.abortReason = reason
                break
            }
        }
        return result
    }

    /// What the push's loop found of an operation in the queue as it is now.
    enum Opening: Sendable {
        /// Gone from the queue, or waiting for another (its row's insert, or one not settled).
        case skipped
        /// What to do depends on the server's capabilities: asked before it is marked.
        case asks(SyncOperation)
        /// Marked sending, its request built (``markSending(_:_:engine:replay:)``) with this engine.
        case marked(SyncOperation, replay: Bool, Result<Sending?, TableError<JSONObject>>, TableEngine)
    }

    /// A row of a table: the key of a batch run's one-operation-per-row rule.
    struct RowKey: Hashable {
        var table: String
        var itemID: String
        init(_ operation: SyncOperation) {
            table = operation.table
            itemID = operation.itemID
        }
        init(_ outcome: PushOutcome) {
            table = outcome.table
            itemID = outcome.id
        }
    }

    /// An operation of a row made offline in a table whose server names rows, other than its
    /// insert: it is sent once the insert's answer has given the row its server id (which
    /// renames the operation), never under the local id.
    static func waitsForItsInsert(_ operation: SyncOperation) -> Bool {
        operation.kind != .insert && LocalID.isLocal(operation.itemID)
    }

    /// What the push does with `operation` (``OperationLifecycle/action(for:serverHonoursKeys:)``),
    /// asking the server's capabilities only when the answer depends on them; a failure says why
    /// the push stops.
    func action(for operation: SyncOperation, deadline: TimeInterval) async -> Result<
        OperationLifecycle.Action, PushStop
    > {
        let withoutKeys = OperationLifecycle.action(for: operation, serverHonoursKeys: false)
        guard withoutKeys == .holdUncertain else { return .success(withoutKeys) }
        guard let capabilities = await capabilities(deadline: deadline) else {
            return .failure(PushStop("the server's capabilities could not be read (the network?)"))
        }
        return .success(OperationLifecycle.action(for: operation, serverHonoursKeys: capabilities.idempotencyKeys))
    }

    /// Sends a run of operations in one batch and settles each answer in order as a single
    /// push would; returns why the push stops, or nil.
    private func pushBatch(
        _ run: [SyncOperation], total: Int, onConflict: ConflictHandler?, deadline: TimeInterval,
        into result: inout PushResult
    ) async -> String? {
        // The queue as it is now (a local write may have changed it while earlier operations
        // were sent), each operation marked sending in one transaction before the batch goes.
        let sequences = run.map(\.sequence)
        var current: [SyncOperation]
        do {
            current = try await queueWrite { db in
                var sending: [SyncOperation] = []
                for operation in try SyncQueue.operations(db, sequences: sequences)
                where !SyncContext.waitsForItsInsert(operation) && operation.state != .uncertain {
                    // What it is sent with, kept as a single push keeps it (a replay keeps what
                    // its first send carried), by the statement that marks it.
                    let engine = self.engine(for: operation.table)
                    let data =
                        operation.kind == .delete || (operation.isReplay && operation.sentRow != nil)
                        ? nil : engine.row(engine.storeID(operation.itemID)).map(OfflineTable.data)
                    if let marked = try SyncQueue.apply(.send, db, current: operation, sentRow: data) {
                        // The replay is the state before this send.
                        var before = marked
                        before.state = operation.state
                        sending.append(before)
                    }
                }
                return sending
            }
        } catch {
            return "\(error)"
        }
        guard !current.isEmpty else { return nil }
        var answers: [String: BatchAnswer] = [:]
        var resendable = true
        for operation in current {
            guard await resendCannotDuplicate(operation, deadline: deadline) else {
                resendable = false
                break
            }
        }
        switch await sendBatch(current, deadline: deadline, resendable: resendable) {
        case .success(let received):
            answers = received.answers
            if received.resent {
                // Sent twice: each answer is checked as a replay's (a 409 or a 412 may be the
                // first arrival's own doing).
                current = current.map { operation in
                    var replayed = operation
                    replayed.state = .attempted
                    return replayed
                }
            }
        case .failure(let error):
            if let http = error.httpError, http.code == .transport || http.code == .cancelled || http.status == 401 {
                let lost = current.map(\.sequence)
                _ = try? await queueWrite { db in
                    for sequence in lost { try SyncQueue.apply(.answerLost, db, sequence: sequence) }
                }
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
        // Plain successes in a row, of one table, are taken in one commit; anything else goes
        // through the rules one by one, in order.
        var plain: [(operation: SyncOperation, answer: BatchAnswer)] = []
        for operation in current {
            let answer = answers[operation.key]
            let isPlain = answer.map { Self.isPlainSuccess(operation, $0) } ?? false
            if isPlain, let answer, plain.first.map({ $0.operation.table == operation.table }) ?? true {
                plain.append((operation, answer))
                continue
            }
            if let reason = await settle(plain, total: total, onConflict: onConflict, deadline: deadline, into: &result)
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
                operation, answer: answer, total: total, onConflict: onConflict, deadline: deadline, into: &result)
            {
                return reason
            }
        }
        return await settle(plain, total: total, onConflict: onConflict, deadline: deadline, into: &result)
    }

    /// Whether an answer from a batch needs none of the push's rules beyond taking it: a 2xx
    /// to an insert, an update or a delete.
    static func isPlainSuccess(_ operation: SyncOperation, _ answer: BatchAnswer) -> Bool {
        (200..<300).contains(answer.status) && batchable(operation)
    }

    /// Settles a run of plain successes of one table in one commit (``commitAnswers(_:engine:)``).
    /// Should that commit be refused (an answer that cannot be read), each goes through the
    /// rules on its own. Returns why the push stops, or nil.
    private func settle(
        _ plain: [(operation: SyncOperation, answer: BatchAnswer)], total: Int, onConflict: ConflictHandler?,
        deadline: TimeInterval, into result: inout PushResult
    ) async -> String? {
        guard let table = plain.first?.operation.table else { return nil }
        let answered = plain.map {
            (operation: $0.operation, answer: WriteAnswer(status: $0.answer.status, row: $0.answer.row))
        }
        if (try? await commitAnswers(answered, engine: engine(for: table))) != nil {
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
                operation, answer: answer, total: total, onConflict: onConflict, deadline: deadline, into: &result)
            {
                return reason
            }
        }
        return nil
    }

    /// Settles one operation of a batch through the one-by-one rules, with its answer from the
    /// batch (or, without one, by sending it alone); returns why the push stops, or nil.
    private func settleAlone(
        _ operation: SyncOperation, answer: BatchAnswer?, total: Int, onConflict: ConflictHandler?,
        deadline: TimeInterval, into result: inout PushResult
    ) async -> String? {
        var outcome = PushOutcome(
            sequence: operation.sequence, table: operation.table, id: operation.itemID, kind: operation.kind,
            status: nil, result: .ok)
        let step = await pushOne(
            operation, replay: operation.isReplay, onConflict: onConflict, deadline: deadline, outcome: &outcome,
            retriesLeft: 1, prepared: answer)
        result.outcomes.append(outcome)
        report(.push(sent: result.outcomes.count, total: total))
        if case .abort(let reason) = step { return reason }
        return nil
    }

    enum PushStep {
        case next
        case abort(String)
    }

    /// An operation marked sending, with its request built from its row as read in that
    /// transaction (nil: the row is gone locally) and that row.
    struct Sending: Sendable {
        var operation: SyncOperation
        var request: OperationRequest?
        var local: JSONObject?
    }

    /// The request of `operation` from its local row `local` as read once, or, sent again after
    /// it may have been applied (`replay`), from the data its first send carried; nil when the
    /// row is gone locally and nothing was sent before.
    func sendingRequest(for operation: SyncOperation, engine: TableEngine, local: JSONObject?, replay: Bool)
        throws(TableError<JSONObject>) -> OperationRequest?
    {
        if operation.kind == .delete { return try request(for: operation, engine: engine) }
        // Sent again, a write carries what its first send carried: a local edit made since is an
        // operation of its own, queued behind it, and the 409 or 412 of its own first arrival
        // is recognised only against the data that arrival carried. So too when the row was
        // deleted locally since: the write may be on the server, and its answer (or its own
        // 409/412, checked) gives the delete behind it the server's version, where a delete
        // sent with the version before it would meet a 412 of the device's own making.
        if replay, let again = operation.sentRow { return try request(for: operation, engine: engine, row: again) }
        if let local { return try request(for: operation, engine: engine, row: local) }
        return nil
    }

    /// Marks `current` (the operation as read in this transaction) sending, reads its row once,
    /// builds the request's body from that read and keeps the same data as what was sent (what
    /// a replay's answer is compared with, and what a lookup after a lost answer looks for; the
    /// local row may change later). Nil: the operation left the queue.
    func markSending(_ current: SyncOperation, _ db: Database, engine: TableEngine, replay: Bool) throws
        -> Result<Sending?, TableError<JSONObject>>
    {
        guard let marked = try SyncQueue.apply(.send, db, current: current) else { return .success(nil) }
        let local = marked.kind == .delete ? nil : engine.row(engine.storeID(marked.itemID))
        let built = Result { () throws(TableError<JSONObject>) -> OperationRequest? in
            try self.sendingRequest(for: marked, engine: engine, local: local, replay: replay)
        }
        if case .success(.some) = built, let local, !(replay && marked.sentRow != nil) {
            try SyncQueue.setSentRow(db, sequence: marked.sequence, OfflineTable.data(local))
        }
        return built.map { Sending(operation: marked, request: $0, local: local) }
    }

    /// Why a push stops before an operation.
    struct PushStop: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends one operation (or takes its answer from a batch) and settles it. `replay`: an
    /// earlier attempt may have been applied.
    /// `resendsLeft`: how many times more a request whose answer was lost may be sent again at
    /// once, when that cannot apply it twice (``resendCannotDuplicate(_:deadline:)``).
    private func pushOne(
        _ queued: SyncOperation, replay: Bool, onConflict: ConflictHandler?, deadline: TimeInterval,
        outcome: inout PushOutcome, retriesLeft: Int, resendsLeft: Int = 1, prepared: BatchAnswer? = nil,
        marked: (sending: Result<Sending?, TableError<JSONObject>>, engine: TableEngine)? = nil
    ) async -> PushStep {
        // The engine the operation was marked with, when the loop marked it: one engine for the
        // whole operation, whatever the table's settings become meanwhile.
        let engine = marked?.engine ?? engine(for: queued.table)
        let sequence = queued.sequence
        var operation = queued
        var sent = queued.sentRow
        // No answer within the deadline: not sent again now (the server is slow, or gone).
        var resends = resendsLeft
        do throws(TableError<JSONObject>) {
            let built: OperationRequest?
            if prepared == nil {
                // Sending, in one transaction written before the request goes: the operation
                // marked, its row read once, the request's body built from that read, and the
                // same data kept as what was sent (what a replay's answer is compared with, and
                // what a lookup after a lost answer looks for; the local row may change later).
                // (A batch marked its operations already.)
                // (The push's loop may have marked it already, with its read of the queue.)
                let sending: Result<Sending?, TableError<JSONObject>>
                if let marked {
                    sending = marked.sending
                } else {
                    do {
                        sending = try await queueWrite { [self] db in
                            guard let current = try SyncQueue.operation(db, sequence: sequence) else {
                                return .success(nil)
                            }
                            return try markSending(current, db, engine: engine, replay: replay)
                        }
                    } catch {
                        return .abort("\(error)")
                    }
                }
                guard let now = try sending.get() else { return .next }
                operation = now.operation
                built = now.request
                if built != nil, let local = now.local, !(replay && operation.sentRow != nil) {
                    sent = OfflineTable.data(local)
                }
            } else {
                built = try sendingRequest(
                    for: operation, engine: engine, local: engine.row(engine.storeID(operation.itemID)), replay: replay)
            }
            guard let request = built else {
                // The row was deleted locally: when its delete is queued behind, that delete
                // settles the row on the server (a 404 there is a success), and this write has
                // nothing left to send. An insert never applied takes the row's operations with
                // it: the server never had the row.
                let table = operation.table
                let item = operation.itemID
                let dropsRow = !replay && operation.kind == .insert
                let moot = try? await queueWrite { db -> Bool in
                    let behind = try SyncQueue.operations(db, table: table, itemID: item)
                        .filter { $0.sequence > sequence }
                    guard behind.contains(where: { $0.kind == .delete }) else {
                        try SyncQueue.recordFailure(
                            db, sequence: sequence, status: nil, serverItem: nil, rawBody: [],
                            error: "the local row is gone")
                        return false
                    }
                    try SyncQueue.remove(db, sequence: sequence)
                    if dropsRow { for next in behind { try SyncQueue.remove(db, sequence: next.sequence) } }
                    return true
                }
                outcome.result = moot == true ? .ok : .error
                return .next
            }
            var headers: HTTPHeaders = ["Idempotency-Key": operation.key]
            if let ifMatch = request.ifMatch { headers["If-Match"] = ifMatch }
            let path = try engine.rowPath(request.pathID)
            let method = request.method
            let body = request.body
            let fields = headers
            let answer: WriteAnswer
            if prepared != nil {
                answer = try await exchange(engine, method, path, body: body, headers: fields, prepared: prepared)
            } else if let received = try await exchange(
                engine, method, path, body: body, headers: fields, deadline: deadline)
            {
                answer = received
            } else {
                resends = 0
                throw engine.mapped(
                    HTTPError(
                        .transport, "\(method) \(path) had no answer within its deadline of \(deadline) s",
                        method: method, endpoint: path))
            }
            outcome.status = answer.status
            do {
                try await commitAnswers([(operation, answer)], engine: engine)
            } catch {
                // Applied on the server, not taken locally (an answer that is not a row, a store
                // that cannot be written): left attempted, so the next push checks it.
                _ = try? await queueWrite { db in try SyncQueue.apply(.answerLost, db, sequence: sequence) }
                outcome.result = .error
                return .next
            }
            outcome.result = .ok
            return .next
        } catch {
            outcome.status = error.status
            return await handle(
                error, operation: operation, sent: sent, engine: engine, replay: replay, onConflict: onConflict,
                deadline: deadline, outcome: &outcome, retriesLeft: retriesLeft, resendsLeft: resends)
        }
    }

    private func handle(
        _ error: TableError<JSONObject>, operation: SyncOperation, sent: JSONObject?, engine: TableEngine,
        replay: Bool, onConflict: ConflictHandler?, deadline: TimeInterval, outcome: inout PushOutcome,
        retriesLeft: Int, resendsLeft: Int
    ) async -> PushStep {
        let sequence = operation.sequence
        // The network or a cancel: the server may or may not have it.
        if error.code == .http, let http = error.httpError, http.code == .transport || http.code == .cancelled {
            _ = try? await queueWrite { db in try SyncQueue.apply(.answerLost, db, sequence: sequence) }
            // A connection that closed before any answer (a kept-alive one the server had closed
            // meanwhile, a lost answer): sent again once, at once, when a second arrival cannot
            // apply it twice; its answer is then checked as a replay's. Nothing more goes now
            // otherwise (a cancel, the network down, a write that could be applied twice).
            if http.code == .transport, resendsLeft > 0, !Task.isCancelled,
                await resendCannotDuplicate(operation, deadline: deadline),
                let again = try? await queueRead({ db in try SyncQueue.operation(db, sequence: sequence) }),
                again.state == .attempted
            {
                return await pushOne(
                    again, replay: true, onConflict: onConflict, deadline: deadline, outcome: &outcome,
                    retriesLeft: retriesLeft, resendsLeft: resendsLeft - 1)
            }
            outcome.result = .error
            return .abort(http.message)
        }
        // A 401: refused, and nothing more can go through now.
        if error.status == 401 {
            await record(error, sequence: sequence)
            outcome.result = .error
            return .abort("the server answered 401")
        }
        let gone = error.code == .notFound || error.code == .gone
        if operation.kind == .delete, gone {
            _ = try? await queueWrite { db in try SyncQueue.remove(db, sequence: sequence) }
            outcome.result = .ok
            return .next
        }
        guard error.code == .preconditionFailed || error.code == .conflict || (gone && operation.kind == .update)
        else {
            await record(error, sequence: sequence)
            outcome.result = .error
            return .next
        }
        var serverItem = gone ? nil : error.serverItemJSON
        if !gone, replay {
            // Sent before with its answer lost, this 409 or 412 may be the write's own first
            // arrival (a POST whose row is there now, a PATCH or a DELETE whose If-Match its own
            // write made stale): the error's body proves nothing, the server's row read now does.
            switch await checkReplay(operation, sent: sent, engine: engine, deadline: deadline) {
            case .applied(let row):
                // Its own first arrival: applied once, taken as its answer, never a conflict.
                let settled: Bool
                if operation.kind == .delete {
                    settled = (try? await queueWrite { db in try SyncQueue.remove(db, sequence: sequence) }) != nil
                } else {
                    let answer = WriteAnswer(status: 200, row: row)
                    settled = (try? await commitAnswers([(operation, answer)], engine: engine)) != nil
                }
                guard settled else {
                    // Applied on the server, not taken locally: attempted, checked again next push.
                    _ = try? await queueWrite { db in try SyncQueue.apply(.answerLost, db, sequence: sequence) }
                    outcome.result = .error
                    return .next
                }
                outcome.result = .ok
                return .next
            case .differs(let row):
                // Another write's: a conflict, over the server's row as read (or, when it has
                // none, the error's).
                if let row { serverItem = row }
            case .unknown(let reason):
                // Not known to be its own, nor another's: no conflict is made of it. It stays
                // attempted (maybe applied), the push stops, and the next push checks it again.
                _ = try? await queueWrite { db in try SyncQueue.apply(.answerLost, db, sequence: sequence) }
                outcome.result = .error
                return .abort(
                    "\(operation.kind) \(operation.itemID), sent twice, was answered \(error.status ?? 0) and the "
                        + "server's row could not be read to tell its own first arrival from a conflict (\(reason)); "
                        + "it stays attempted for the next push")
            }
        }
        // The server keeps the row deleted (a 412 or 409 that brings the deleted row).
        let serverKeepsItDeleted =
            serverItem.map { item in
                guard let name = engine.wireName(.deleted), case .bool(true)? = item[name] else { return false }
                return true
            } ?? false
        if operation.kind == .delete, serverKeepsItDeleted {
            // Deleted on both sides: the delete is done, no conflict.
            var change = StoreChange()
            change.remove(engine.storeID(operation.itemID))
            if (try? await commitSettling(change, dropping: sequence)) != nil {
                outcome.result = .ok
                return .next
            }
        }
        let conflict = SyncConflict(
            operation: operation, status: error.status ?? 0,
            localItem: operation.kind == .delete ? operation.item : engine.row(engine.storeID(operation.itemID)),
            serverItem: serverItem)
        guard let onConflict else {
            await record(error, sequence: sequence, serverItem: serverItem)
            outcome.result = .conflict
            return .next
        }
        let serverVersion = serverItem.flatMap { item -> String? in
            guard let name = engine.wireName(.version), case .string(let v)? = item[name] else { return nil }
            return v
        }
        let storeID = engine.storeID(operation.itemID)
        switch await onConflict(conflict) {
        case .abort:
            await record(error, sequence: sequence, serverItem: serverItem)
            outcome.result = .conflict
            return .abort("the conflict handler stopped the push at operation \(sequence)")
        case .serverWins:
            // Each way of taking the server's side commits once; a commit refused leaves the
            // conflict recorded.
            let committed: Bool
            if operation.kind == .delete, let serverItem {
                // The local delete is refused: the server's row comes back locally (its answer
                // path takes no row for a delete), unless the server keeps it deleted. Left
                // deleted locally, a pull whose key had passed the row never brought it back.
                var change = StoreChange()
                if serverKeepsItDeleted {
                    change.remove(storeID)
                } else {
                    var fields = serverItem
                    fields["id"] = nil
                    change.upsert(id: storeID, fields: fields)
                }
                committed = (try? await commitSettling(change, dropping: sequence)) != nil
            } else if serverKeepsItDeleted {
                // The server keeps the row deleted (a 412 that brings the deleted row): it goes
                // locally with every operation of it. Taken as an answer it stayed as a live
                // row, which no pull whose key had passed the delete removed.
                var change = StoreChange()
                change.remove(storeID)
                let table = operation.table
                let item = operation.itemID
                let removed: Void? = try? await commitQueued(change) { db in
                    for queued in try SyncQueue.operations(db, table: table, itemID: item)
                    where queued.sequence >= sequence {
                        try SyncQueue.remove(db, sequence: queued.sequence)
                    }
                }
                committed = removed != nil
            } else if let serverItem {
                // As an answer: the server's row, or only its system properties when a later
                // local change is queued behind (that change is newer than the conflict).
                let answer = WriteAnswer(status: error.status ?? 0, row: serverItem)
                committed = (try? await commitAnswers([(operation, answer)], engine: engine)) != nil
            } else if gone {
                // The server has no such row: neither has the device now.
                var change = StoreChange()
                change.remove(storeID)
                committed = (try? await commitSettling(change, dropping: sequence)) != nil
            } else {
                committed = false
            }
            guard committed else {
                await record(error, sequence: sequence, serverItem: serverItem)
                outcome.result = .conflict
                return .next
            }
            outcome.result = .resolved
            return .next
        case .discard:
            // The row goes locally, and with it the inserts and updates of it queued behind
            // (left, they would fail forever on a row that is not there); a delete behind
            // still goes.
            var change = StoreChange()
            change.remove(storeID)
            let table = operation.table
            let item = operation.itemID
            _ = try? await commitQueued(change) { db in
                for queued in try SyncQueue.operations(db, table: table, itemID: item)
                where queued.sequence == sequence || (queued.sequence > sequence && queued.kind != .delete) {
                    try SyncQueue.remove(db, sequence: queued.sequence)
                }
            }
            outcome.result = .resolved
            return .next
        case .replace(let row):
            var change = StoreChange()
            var fields = OfflineTable.data(row)
            if let name = engine.wireName(.version), let serverVersion { fields[name] = .string(serverVersion) }
            change.upsert(id: storeID, fields: fields)
            // Over the server's version; a row the server no longer has is inserted again.
            let kind: SyncOperation.Kind = gone ? .insert : operation.kind == .insert ? .update : operation.kind
            try? await commitQueued(change) { db in
                try SyncQueue.collapse(db, sequence: sequence, kind: kind, version: serverVersion, item: operation.item)
                try SyncQueue.apply(.released, db, sequence: sequence)
            }
            outcome.result = .resolved
            return .next
        case .clientWins:
            // A row the server keeps deleted is gone for the client's side too: its write
            // becomes the row's insert again (which a server that keeps the id refuses: the
            // delete then stands).
            let gone = gone || serverKeepsItDeleted
            guard retriesLeft > 0, serverVersion != nil || operation.kind != .insert || gone else {
                await record(error, sequence: sequence, serverItem: serverItem)
                outcome.result = .conflict
                return .next
            }
            // Over the server's version: an insert of a row the server has becomes an update,
            // an update of a row the server no longer has becomes its insert.
            let kind: SyncOperation.Kind = gone ? .insert : operation.kind == .insert ? .update : operation.kind
            let again: SyncOperation?
            do {
                again = try await queueWrite { db in
                    try SyncQueue.collapse(
                        db, sequence: sequence, kind: kind, version: gone ? nil : serverVersion, item: operation.item)
                    return try SyncQueue.operation(db, sequence: sequence)
                }
            } catch {
                return .next
            }
            guard let again else { return .next }
            // A row the server keeps deleted refuses its id again (409): the delete then stands,
            // and the row goes locally.
            let discard: ConflictHandler = { @Sendable _ in .discard }
            let stands: ConflictHandler? = gone ? discard : nil
            let step = await pushOne(
                again, replay: false, onConflict: stands, deadline: deadline, outcome: &outcome,
                retriesLeft: retriesLeft - 1, resendsLeft: resendsLeft)
            if outcome.result == .ok { outcome.result = .resolved }
            return step
        }
    }

    /// Records a refused attempt on its operation: failed, with the server's answer.
    private func record(_ error: TableError<JSONObject>, sequence: Int64, serverItem: JSONObject? = nil) async {
        let item = serverItem ?? error.serverItemJSON
        _ = try? await queueWrite { db in
            try SyncQueue.recordFailure(
                db, sequence: sequence, status: error.status, serverItem: item, rawBody: error.body,
                error: error.message)
        }
    }

    /// What a read of one server row found.
    enum FetchedRow: Sendable {
        /// The server's row.
        case present(JSONObject)
        /// The server has no such row, or keeps it deleted (404, 410).
        case absent
        /// The read failed (the network, its deadline, another status, a body that is not a
        /// row): nothing is known of the row. Why, for the push's abort reason.
        case unreadable(String)
    }

    /// The server's row, read as JSON without touching the store, within `deadline` seconds.
    /// "No such row" and "the read failed" are told apart: only the first says anything of it.
    func fetch(_ id: String, engine: TableEngine, deadline: TimeInterval) async -> FetchedRow {
        let path: String
        do { path = try engine.rowPath(id) } catch { return .unreadable("\(error)") }
        let session = self.session
        let fetched = await RequestDeadline.run(deadline) { () async -> FetchedRow in
            do throws(HTTPError) {
                let result = try await session.send(.get, path, consuming: .json())
                guard case .object(let row)? = result.json else {
                    return .unreadable("GET \(path) answered \(result.status) without a row")
                }
                return .present(row)
            } catch {
                if error.code == .status, error.status == 404 || error.status == 410 { return .absent }
                return .unreadable("GET \(path): \(error.message)")
            }
        }
        guard case .finished(let row) = fetched else {
            return .unreadable("GET \(path) had no answer within its deadline of \(deadline) s")
        }
        return row
    }

    /// What the server's row, read now, says of a write sent before (its answer lost) and
    /// refused with 409 or 412 when sent again.
    enum ReplayCheck: Sendable {
        /// The server holds exactly what was sent (for a delete: no live row): the refusal is
        /// the write's own first arrival. The row, for an insert or an update.
        case applied(JSONObject?)
        /// The server holds something else: a conflict. Its row (nil: it has none).
        case differs(JSONObject?)
        /// The row could not be read: neither is known. Why.
        case unknown(String)
    }

    /// Checks a write sent before against the server's row read now: an insert or an update
    /// whose data the row holds (`sent`, else the local row: it may hold a later change by
    /// now), a delete whose row is absent or deleted, is applied.
    func checkReplay(_ operation: SyncOperation, sent: JSONObject?, engine: TableEngine, deadline: TimeInterval)
        async -> ReplayCheck
    {
        let fetched = await fetch(operation.itemID, engine: engine, deadline: deadline)
        switch (operation.kind, fetched) {
        case (_, .unreadable(let reason)):
            return .unknown(reason)
        case (.delete, .absent):
            return .applied(nil)
        case (.delete, .present(let row)):
            let deleted = engine.wireName(.deleted).map { row[$0] == .bool(true) } ?? false
            return deleted ? .applied(nil) : .differs(row)
        case (_, .absent):
            return .differs(nil)
        case (_, .present(let row)):
            let deleted = engine.wireName(.deleted).map { row[$0] == .bool(true) } ?? false
            guard !deleted, let local = sent ?? engine.row(engine.storeID(operation.itemID)),
                OfflineTable.sameData(local, row)
            else { return .differs(row) }
            return .applied(row)
        }
    }

    /// Whether a write whose answer was lost can be sent again without being applied twice: an
    /// insert under an id the client chose (a second arrival is refused with 409, and the
    /// server's row then checked), an update or a delete carrying its version (`If-Match`: a
    /// second arrival is refused with 412, or 404/410 for a delete), or any write when the
    /// server advertises idempotency keys (it answers a replay with its first answer).
    func resendCannotDuplicate(_ operation: SyncOperation, deadline: TimeInterval) async -> Bool {
        switch operation.kind {
        case .insert where !LocalID.isLocal(operation.itemID): return true
        case .update, .delete: if operation.version != nil { return true }
        default: break
        }
        return await capabilities(deadline: deadline)?.idempotencyKeys ?? false
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
