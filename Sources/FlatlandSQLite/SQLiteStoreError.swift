import GRDB

/// Why a SQLite store could not be opened, read or written.
///
/// ```swift
/// do {
///     let persistence = try SQLitePersistence(location: location)
/// } catch let error as SQLiteStoreError where error.code == .notFlatland {
///     // the file belongs to something else: it was left alone
/// }
/// ```
public struct SQLiteStoreError: Error, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Hashable, Sendable {
        /// The file is not a SQLite database at all. It was not changed.
        case notADatabase
        /// The file is a SQLite database, but not a Flatland store. It was not changed.
        case notFlatland
        /// The database is damaged. It was not changed.
        case corrupt
        /// The file was written by a newer Flatland, with a schema this one does not know.
        case newerSchema
        /// This process already has the file open (each file is opened once per process).
        case alreadyOpen
        /// The store was closed.
        case closed
        /// SQLite reported another error.
        case sqlite
    }

    /// What kind of failure this is.
    public var code: Code
    /// The database file.
    public var path: String
    /// What went wrong, in words.
    public var message: String

    /// An error.
    public init(_ code: Code, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }

    /// Maps SQLite's error to a store error.
    static func wrap<R>(path: String, _ body: () throws -> R) throws(SQLiteStoreError) -> R {
        do { return try body() } catch let error as SQLiteStoreError { throw error } catch {
            throw SQLiteStoreError(sqlite: error, path: path)
        }
    }

    init(sqlite error: any Error, path: String) {
        guard let error = error as? DatabaseError else {
            self.init(.sqlite, path: path, message: "\(error)")
            return
        }
        switch error.resultCode {
        case .SQLITE_NOTADB:
            self.init(
                .notADatabase, path: path, message: "not a SQLite database (or encrypted); the file was left as it is")
        case .SQLITE_CORRUPT:
            self.init(.corrupt, path: path, message: "the database is corrupt; the file was left as it is")
        default:
            self.init(.sqlite, path: path, message: error.message ?? "\(error)")
        }
    }
}
