import Flatland

/// One SQLite store file per `(user, environment)` in a directory: what a FlatlandHTTP
/// `Session` keeps on disk.
///
/// ```swift
/// let session = try Session(
///     user: "u-42", environment: production, registry: registry,
///     storage: .persistent(SQLitePersistence.sessionStorage(in: supportDirectory)))
/// // …a restart later, the same call sees what was stored; on logout:
/// await session.logout()  // cancels, wipes in one transaction, closes and removes the file
/// ```
///
/// The file of a pair is ``SQLiteStoreLocation/path``: its name is made from the environment
/// and the user, escaped so that no name can leave the directory and two different pairs never
/// share a file.
public struct SQLiteSessionStorage: StorePersistenceFactory {
    /// The directory of the store files (created when the first one is).
    public var directory: String
    /// How each file is opened.
    public var options: SQLitePersistence.Options

    /// Storage in `directory`.
    public init(directory: String, options: SQLitePersistence.Options = SQLitePersistence.Options()) {
        self.directory = directory
        self.options = options
    }

    /// Where the store of `user` in `environment` lives.
    public func location(user: String, environment: String) -> SQLiteStoreLocation {
        SQLiteStoreLocation(directory: directory, user: user, environment: environment)
    }

    /// Opens (creating if needed) the file of `user` in `environment`.
    ///
    /// - Throws: ``SQLiteStoreError``, as ``SQLitePersistence/init(location:options:)``.
    public func makePersistence(user: String, environment: String) throws -> any StorePersistence {
        try SQLitePersistence(location: location(user: user, environment: environment), options: options)
    }

    /// Closes the file and removes it with its WAL and SHM companions.
    ///
    /// - Throws: ``SQLiteStoreError``: `fileSystem` when the files cannot be removed,
    ///   `sqlite` when `persistence` is not one this storage made for that pair.
    public func destroyPersistence(_ persistence: any StorePersistence, user: String, environment: String) throws {
        let expected = location(user: user, environment: environment).path
        guard let sqlite = persistence as? SQLitePersistence,
            OpenFiles.key(for: sqlite.path) == OpenFiles.key(for: expected)
        else {
            throw SQLiteStoreError(
                .sqlite, path: expected, message: "this persistence is not the store file of \(user) in \(environment)")
        }
        try sqlite.destroy()
    }

    /// Closes the file (folding its log into it) and keeps it.
    public func closePersistence(_ persistence: any StorePersistence) {
        (persistence as? SQLitePersistence)?.close()
    }
}

extension SQLitePersistence {
    /// Session storage: one store file per `(user, environment)` in `directory`, for
    /// FlatlandHTTP's `Session(…, storage: .persistent(…))`.
    public static func sessionStorage(in directory: String, options: Options = Options()) -> SQLiteSessionStorage {
        SQLiteSessionStorage(directory: directory, options: options)
    }
}
