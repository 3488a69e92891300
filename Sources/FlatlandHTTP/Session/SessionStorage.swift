import Flatland

/// Where a ``Session`` keeps its store.
///
/// ```swift
/// // In memory: gone when the session ends.
/// let guest = Session(user: "guest", environment: production)
/// // On disk, one file per user and environment (FlatlandSQLite provides the factory):
/// let ada = try Session(
///     user: "u-42", environment: production, registry: registry,
///     storage: .persistent(SQLitePersistence.sessionStorage(in: supportDirectory)))
/// ```
public enum SessionStorage: Sendable {
    /// A new in-memory store.
    case memory
    /// A store on the persistence `factory` makes for the session's user and environment name
    /// (``Environment/name``): what was stored by an earlier session of the same pair is there
    /// again. Logging out wipes it and has the factory destroy it.
    case persistent(any StorePersistenceFactory)
}
