import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import GRDB
import Synchronization

/// The offline side of a session's tables: local rows, the queue of changes to push, and the
/// delta tokens of incremental pulls, all in the session's own SQLite file.
///
/// A local write and its queue entry are one transaction; a pushed operation leaves the queue in
/// the transaction that writes the server's answer; a pulled page and its delta token are one
/// transaction. A crash at any point leaves a state a later push or pull continues from, with
/// nothing lost or applied twice.
///
/// ```swift
/// let session = try Session(user: "ada", environment: env, storage: .persistent(storage), configuration: configuration)
/// let sync = try SyncContext(session: session)
/// let todos = sync.table("todoitem")
/// let row = try todos.insert(["text": "Buy milk"])      // local, queued
/// let pushed = await sync.push(onConflict: ConflictPolicy.serverWins)
/// let pulled = try await todos.pull(queryID: "all")     // incremental, resumable
/// ```
public final class SyncContext: Sendable {
    /// The session the tables talk through; its store holds the local rows.
    public let session: Session
    /// How every table of the context talks to the server.
    public let options: TableOptions

    struct TableSettings: Sendable {
        var prefix: String
        var collapses: Bool
    }

    private struct State {
        var tables: [String: TableSettings] = [:]
        /// The engine of each table as ``engine(for:)`` built it for its settings (a push asks
        /// for one several times an operation; building one resolves its protocol and rules).
        var engines: [String: TableEngine] = [:]
        var observers: [Int: AsyncStream<SyncProgress>.Continuation] = [:]
        var nextObserver = 0
    }

    private let state = Mutex(State())
    /// The server's capabilities, once asked (``push(onConflict:options:)``).
    let capabilityCache = Mutex<ServerCapabilities?>(nil)

    /// A context for `session`, whose store must be kept in SQLite (a session made with
    /// FlatlandSQLite's session storage); creates the queue's tables in its file when missing.
    ///
    /// - Throws: ``SyncErrorCode/notPersistent``, ``SyncErrorCode/protocolMismatch`` when
    ///   `options` and the session name two protocols, or ``SyncErrorCode/store`` when the file
    ///   cannot be written.
    public init(session: Session, options: TableOptions = TableOptions()) throws(SyncError) {
        if case .failure(let e) = options.resolvedProtocol(in: session, table: "") {
            throw SyncError(.protocolMismatch, e.message, tableError: e)
        }
        guard session.store.persistence is SQLitePersistence else {
            throw SyncError(.notPersistent, "the session's store is not kept in SQLite; the queue lives in its file")
        }
        self.session = session
        self.options = options
        try transaction { db in try SyncQueue.create(db) }
    }

    /// An untyped offline table. `prefix` names its rows' store ids (by default made from the
    /// name); `collapses: false` sends every change as its own request, in order;
    /// `serverAssignsIDs` is remembered in the file for the table.
    public func table(
        _ name: String, prefix: String? = nil, collapses: Bool = true, serverAssignsIDs: Bool = false
    ) -> OfflineTable {
        let settings = TableSettings(prefix: prefix ?? TableRowID.prefix(forTable: name), collapses: collapses)
        state.withLock {
            $0.tables[name] = settings
            $0.engines[name] = nil
        }
        if serverAssignsIDs { try? transaction { db in try SyncQueue.setServerAssignsIDs(db, table: name) } }
        return OfflineTable(context: self, name: name, engine: engine(for: name))
    }

    func settings(_ table: String) -> TableSettings {
        state.withLock { $0.tables[table] }
            ?? TableSettings(prefix: TableRowID.prefix(forTable: table), collapses: true)
    }

    /// The table's engine. Its requests' task collections are not kept: a pull's pages and a
    /// push's answers would push the app's own out of the store's newest.
    func engine(for table: String) -> TableEngine {
        if let built = state.withLock({ $0.engines[table] }) { return built }
        let prefix = settings(table).prefix
        let engine = TableEngine(
            session: session, name: table, prefix: prefix, options: options, keepsTaskCollections: false)
        state.withLock { s in
            // Kept only if the table's settings did not change meanwhile.
            if (s.tables[table]?.prefix ?? TableRowID.prefix(forTable: table)) == prefix { s.engines[table] = engine }
        }
        return engine
    }

    // MARK: Progress

    /// The progress of every later push and pull of this context, as it happens: operations
    /// settled of the total, pages and rows committed. The sequence ends when the consumer
    /// stops iterating.
    public func progress() -> AsyncStream<SyncProgress> {
        let (stream, continuation) = AsyncStream<SyncProgress>.makeStream(bufferingPolicy: .unbounded)
        let key = state.withLock { s in
            s.nextObserver += 1
            s.observers[s.nextObserver] = continuation
            return s.nextObserver
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: key) }
        }
        return stream
    }

    func report(_ progress: SyncProgress) {
        for observer in state.withLock({ Array($0.observers.values) }) { observer.yield(progress) }
    }

    // MARK: The queue

    /// The queue, in push order; only `table`'s operations when given.
    public func operations(table: String? = nil) throws(SyncError) -> [SyncOperation] {
        try read { db in try SyncQueue.operations(db, table: table) }
    }

    /// The operations that need the app: those that failed, with their status and the server's
    /// row, and those held ``SyncOperation/State/uncertain``, in queue order.
    public func failedOperations() throws(SyncError) -> [SyncOperation] {
        try operations().filter { $0.state == .failed || $0.state == .uncertain }
    }

    /// The version of the queue's tables in the file (``queueSchemaVersion``, once this context
    /// has opened it).
    public func queueSchemaVersion() throws(SyncError) -> Int {
        try read { db in try SyncQueue.storedSchemaVersion(db) ?? 1 }
    }

    /// The version of the queue's tables this library reads and writes. A file whose queue a
    /// newer version wrote is refused (``SyncErrorCode/unsupportedSchema``), never misread.
    public static let queueSchemaVersion = SyncQueue.schemaVersion

    /// Drops one operation from the queue, whatever its state (a row this version does not
    /// know included); the local row stays as it is: a later pull brings the server's row back
    /// over it, and ``OfflineTable/reconcile(by:ids:)`` removes a row the server does not have.
    /// An operation being sent meanwhile is dropped all the same: its answer then changes
    /// nothing locally.
    ///
    /// - Throws: ``SyncErrorCode/notFound`` when the queue has no such operation.
    public func cancel(_ sequence: Int64) throws(SyncError) {
        try transaction { db in
            guard try SyncQueue.exists(db, sequence: sequence) else {
                throw SyncError(.notFound, "no operation \(sequence) in the queue")
            }
            try SyncQueue.remove(db, sequence: sequence)
        }
    }

    /// Changes the version one operation sends as `If-Match` (after settling a conflict by
    /// hand), and makes it pending again.
    public func edit(_ sequence: Int64, version: String?) throws(SyncError) {
        try transaction { db in
            guard try SyncQueue.operation(db, sequence: sequence) != nil else {
                throw SyncError(.notFound, "no operation \(sequence) in the queue")
            }
            try SyncQueue.setVersion(db, sequence: sequence, version)
            try SyncQueue.setState(db, sequence: sequence, .pending)
        }
    }

    // MARK: The queue, off the cooperative pool

    /// Runs blocking work of the queue (`body`) on a dispatch queue: the push's and the
    /// settling's SQLite work never blocks a thread of Swift's cooperative pool.
    func offPool<T: Sendable>(_ body: @escaping @Sendable () throws(SyncError) -> T) async throws(SyncError) -> T {
        let outcome = await runBlocking { () -> Result<T, SyncError> in
            do throws(SyncError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Reads the queue on a snapshot, off the pool (``offPool(_:)``).
    func queueRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(SyncError) -> T {
        try await offPool { [self] () throws(SyncError) in try read(body) }
    }

    /// Runs `body` in a transaction of the file, off the pool.
    @discardableResult
    func queueWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(SyncError) -> T {
        try await offPool { [self] () throws(SyncError) in try transaction(body) }
    }

    /// Commits `change` with `work` in the same transaction, off the pool.
    func commitQueued(_ change: StoreChange, _ work: @escaping @Sendable (Database) throws -> Void)
        async throws(SyncError)
    {
        try await offPool { [self] () throws(SyncError) in try commit(change, work) }
    }

    // MARK: Transactions

    /// Reads the file on a snapshot, without a write transaction.
    func read<T: Sendable>(_ body: (Database) throws -> T) throws(SyncError) -> T {
        guard let persistence = session.store.persistence as? SQLitePersistence else {
            throw SyncError(.notPersistent, "the session's store is not kept in SQLite")
        }
        let refused = Mutex<SyncError?>(nil)
        do {
            return try persistence.read { db in
                do {
                    return try body(db)
                } catch let error as SyncError {
                    refused.withLock { $0 = error }
                    throw error
                }
            }
        } catch {
            throw refused.withLock { $0 } ?? SyncError(.store, "\(error)")
        }
    }

    /// Runs `body` in a transaction of the session's file (through an empty commit of the store,
    /// so it is serialized with every other write).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) throws(SyncError) -> T {
        let result = Mutex<T?>(nil)
        try commit(StoreChange()) { db in
            let value = try body(db)
            result.withLock { $0 = value }
        }
        return result.withLock { $0 }!
    }

    /// Commits `change` to the store with `work` in the same transaction. A ``SyncError`` the work
    /// throws comes back as it is (kept aside as the work's outcome, not looked for among the
    /// store's wrapped errors); the store is then unchanged.
    func commit(_ change: StoreChange, _ work: @escaping @Sendable (Database) throws -> Void) throws(SyncError) {
        let refused = Mutex<SyncError?>(nil)
        let transactionWork = SQLiteTransactionWork { db in
            do {
                try work(db)
            } catch let error as SyncError {
                refused.withLock { $0 = error }
                throw error
            }
        }
        do {
            try session.store.commit(change, alongside: transactionWork)
        } catch {
            throw refused.withLock { $0 } ?? SyncError(.store, "\(error)")
        }
    }
}
