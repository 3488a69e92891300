import FlatlandJSON

/// One local change waiting to be pushed: a row of the operation queue.
///
/// Its life is a state machine kept in the queue's row (see "Working offline"): queued
/// (``State/pending``), then sending (``State/attempted``: written before the request goes, so a
/// crash or a lost answer leaves it there), then settled (it leaves the queue), ``State/failed``
/// (kept, with the server's answer) or ``State/uncertain`` (an insert that may or may not have
/// been applied and that cannot be sent again without risking a second row).
public struct SyncOperation: Sendable, Hashable {
    /// What the operation does on the server.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// `POST` the local row.
        case insert
        /// `PATCH` (or `PUT` in v3) the local row, with `If-Match`.
        case update
        /// `DELETE` the row, with `If-Match`.
        case delete
    }

    /// Where the operation is in its life.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Queued: not sent yet (or given back to the queue by the app).
        case pending
        /// Sending, or sent with no answer that settled it (a dropped connection, an abort, a
        /// crash): the server may or may not have applied it. A local write to its row is queued
        /// behind it, never merged into it.
        case attempted
        /// Answered with an error or a conflict nobody resolved; ``status``, ``serverItem`` and
        /// ``error`` say what.
        case failed
        /// An insert whose answer was lost, in a table whose server assigns the ids and does not
        /// advertise idempotency keys: sent again it could make a second row, so it is held until
        /// the app settles it (``SyncContext/settle(_:_:)``). Nothing of it is lost locally.
        case uncertain
    }

    /// Its place in the queue: operations are pushed in this order.
    public var sequence: Int64
    /// The table.
    public var table: String
    /// The row's server id.
    public var itemID: String
    /// What it does.
    public var kind: Kind
    /// Where it is.
    public var state: State
    /// The version the change was based on: sent as `If-Match`.
    public var version: String?
    /// For a delete, the row as it was when deleted.
    public var item: JSONObject?
    /// How many local changes this operation stands for (collapsed changes count up).
    public var changes: Int
    /// The HTTP status of the last failed attempt.
    public var status: Int?
    /// The server's row from the last failed attempt (a 412 or 409).
    public var serverItem: JSONObject?
    /// The raw body of the last failed attempt.
    public var rawBody: [UInt8]?
    /// What went wrong in the last failed attempt.
    public var error: String?
    /// The idempotency key its request is sent with (`Idempotency-Key`): a UUID kept while the
    /// request stays the same (a retry, the next push), and a new one whenever the operation
    /// changes (a collapsed change, a new `If-Match`, a client-wins resend), so a server that
    /// remembers keys answers a replay with its first answer and applies the change once.
    public var key: String
    /// Whether an earlier attempt may have been applied by the server without the client
    /// hearing it (its answer was lost, the process stopped while it was out, or the server
    /// answered 5xx). Such an operation is never merged with a later change, and its next
    /// answer is checked against the server's row.
    public var mayHaveBeenApplied: Bool
    /// The data an insert of a row whose server assigns the id was last sent with: what
    /// ``SyncContext/settle(_:_:)`` looks for on the server.
    var sentRow: JSONObject? = nil

    /// Whether the operation was put on the wire before and nothing settled whether it took
    /// effect: it is ``State/attempted`` or an earlier attempt may have been applied.
    var isReplay: Bool { state == .attempted || state == .uncertain || mayHaveBeenApplied }
}

/// The life of one operation as a state machine: the state lives in the queue's row, every
/// change of it is one ``Event``, and what the push does with an operation is an ``Action``
/// decided from its state alone. Nothing here does I/O; ``SyncQueue`` persists each transition
/// in the transaction that does what it says.
///
/// | state | event | next state |
/// | --- | --- | --- |
/// | pending, failed | ``Event/send`` | attempted (sending) |
/// | attempted | ``Event/send`` | attempted (a replay) |
/// | attempted | ``Event/settled`` | (removed) |
/// | attempted | ``Event/refused(serverError:)`` | failed |
/// | attempted | ``Event/answerLost`` | attempted |
/// | attempted, failed (possibly applied) | ``Event/held`` | uncertain |
/// | uncertain | ``Event/released`` | pending |
/// | any | ``Event/cancelled`` | (removed) |
enum OperationLifecycle {
    /// Something that happens to an operation.
    enum Event: Sendable, Hashable {
        /// Its request is about to go (persisted first, so a crash leaves it attempted).
        case send
        /// A 2xx answer, or a conflict settled: it leaves the queue.
        case settled
        /// An error or an unresolved conflict. A 5xx may have been applied all the same.
        case refused(serverError: Bool)
        /// No answer (the network, a cancel): the server may or may not have it.
        case answerLost
        /// A replayed insert that cannot be sent again safely: held.
        case held
        /// The app gave an uncertain (or failed) operation back to the queue.
        case released
        /// The app dropped it.
        case cancelled
    }

    /// What the push does with an operation.
    enum Action: Sendable, Hashable {
        /// Sends it; `replay` when an earlier attempt may have been applied (its answer is then
        /// checked against the server's row).
        case send(replay: Bool)
        /// Holds it as uncertain: sent again it could duplicate its row.
        case holdUncertain
        /// Leaves it alone this push (uncertain, waiting for the app).
        case skip
    }

    /// The state after `event`, or nil when the operation leaves the queue.
    ///
    /// - Throws: ``SyncErrorCode/invalidOperation`` for an event its state does not take.
    static func next(_ state: SyncOperation.State, on event: Event) throws(SyncError) -> SyncOperation.State? {
        switch (state, event) {
        case (_, .cancelled): return nil
        case (.pending, .send), (.failed, .send), (.attempted, .send): return .attempted
        case (.attempted, .settled), (.failed, .settled), (.uncertain, .settled): return nil
        case (.attempted, .refused), (.pending, .refused), (.failed, .refused): return .failed
        case (.attempted, .answerLost): return .attempted
        case (.attempted, .held), (.failed, .held), (.pending, .held), (.uncertain, .held): return .uncertain
        case (.uncertain, .released), (.failed, .released), (.attempted, .released), (.pending, .released):
            return .pending
        default:
            throw SyncError(.invalidOperation, "an operation \(state.rawValue) cannot take \(event)")
        }
    }

    /// What a push does with `operation`: an insert whose server assigns the id, sent before
    /// with its answer lost, goes again only when the server remembers idempotency keys.
    static func action(for operation: SyncOperation, serverHonoursKeys: Bool) -> Action {
        if operation.state == .uncertain { return .skip }
        let replay = operation.isReplay
        if replay, operation.kind == .insert, LocalID.isLocal(operation.itemID), !serverHonoursKeys {
            return .holdUncertain
        }
        return .send(replay: replay)
    }

    /// Whether a new local change may be merged into `operation`: only one never put on the
    /// wire, or answered with a refusal and never possibly applied. An operation being sent (or
    /// whose answer is unknown) gets the change queued behind it.
    static func acceptsCollapse(_ operation: SyncOperation) -> Bool {
        (operation.state == .pending || operation.state == .failed) && !operation.mayHaveBeenApplied
    }
}
