/// Why a write to the store failed: what, and what lay beneath.
///
/// Every write (an ingest's commit, ``Store/commit(_:alongside:)``, `upsert`, `remove`,
/// ``Store/removeAll()``, ``Store/removeCollection(id:)``) either applies whole or throws this,
/// and then the store, its persistence and its observers are as they were.
///
/// ```swift
/// do {
///     try store.commit(change, alongside: queueRows)
/// } catch let error as StoreWriteError where error.code == .persistence {
///     print(error.underlying)  // FlatlandSQLite's SQLiteStoreError
/// }
/// ```
public struct StoreWriteError: Error, CustomStringConvertible {
    /// What kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The persistence could not write the change; ``StoreWriteError/underlying`` is its
        /// own error (FlatlandSQLite's `SQLiteStoreError`). Nothing was written.
        public static let persistence = Code(name: "persistence")
        /// The work given to run alongside the change threw; ``StoreWriteError/underlying`` is
        /// what it threw. The transaction was rolled back: neither the change nor the work's rows
        /// were written.
        public static let transactionWork = Code(name: "transactionWork")
        /// The store cannot run this work alongside a change: an in-memory store has no
        /// transaction, and a persistence runs only its own kind of work (FlatlandSQLite runs
        /// `SQLiteTransactionWork`).
        public static let unsupportedWork = Code(name: "unsupportedWork")
        /// A store hook or the work tried to write to the same store while its own commit was
        /// running (it would wait for itself forever).
        public static let writeInsideCommit = Code(name: "writeInsideCommit")
        public var description: String { name }
    }

    /// What kind of failure.
    public var code: Code
    /// A sentence for people.
    public var message: String
    /// The error beneath: the persistence's own error for ``Code-swift.struct/persistence``,
    /// the work's for ``Code-swift.struct/transactionWork``.
    public var underlying: (any Error & Sendable)?

    /// An error; persistence implementations report their own failures with
    /// ``Code-swift.struct/persistence`` and their error as `underlying`.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        guard let underlying else { return "\(code): \(message)" }
        return "\(code): \(message): \(underlying)"
    }
}

/// Why a query of the store could not be answered.
///
/// ```swift
/// do {
///     let ann = try store.entities(where: \User.email, equals: "ann@example.com")
/// } catch let error as StoreQueryError where error.code == .undeclaredIndex {
///     // User does not list \.email in its `indexes`
/// }
/// ```
public struct StoreQueryError: Error, Hashable, CustomStringConvertible {
    /// What kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The property asked about is not declared in the type's ``Entity/indexes``: the
        /// store keeps no index to look it up in.
        public static let undeclaredIndex = Code(name: "undeclaredIndex")
        public var description: String { name }
    }

    /// What kind of failure.
    public var code: Code
    /// A sentence for people, naming the type and the property.
    public var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
