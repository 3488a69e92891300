/// Makes the persistence of each `(user, environment)`'s store, and removes it on logout.
///
/// A layer that knows nothing of a storage engine (FlatlandHTTP's `Session`) opens and wipes
/// stores through this; an engine provides it (FlatlandSQLite's
/// `SQLitePersistence.sessionStorage(in:)`: one SQLite file per user and environment in a
/// directory the app gives).
///
/// ```swift
/// let storage = SQLitePersistence.sessionStorage(in: supportDirectory)
/// let persistence = try storage.makePersistence(user: "u-42", environment: "production")
/// let store = Store(registry: registry, persistence: persistence)
/// // …on logout:
/// try store.removeAll()
/// try storage.destroyPersistence(persistence, user: "u-42", environment: "production")
/// ```
///
/// Both calls do blocking I/O: run them off Swift's cooperative thread pool.
public protocol StorePersistenceFactory: Sendable {
    /// Opens (creating if needed) the persistence of `user` in `environment`. Two different
    /// pairs never share a persistence.
    func makePersistence(user: String, environment: String) throws -> any StorePersistence

    /// Closes `persistence` (made by ``makePersistence(user:environment:)`` for the same pair)
    /// and removes everything it stored: the end of a logout, after the store was wiped.
    func destroyPersistence(_ persistence: any StorePersistence, user: String, environment: String) throws

    /// Closes `persistence` and keeps what it stored, for a later
    /// ``makePersistence(user:environment:)`` of the same pair (an app closing a session it will
    /// reopen). Later reads and writes through it fail.
    func closePersistence(_ persistence: any StorePersistence)
}
