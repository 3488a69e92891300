import GRDB

/// Why a SQLite store could not be opened, read, written or verified.
///
/// Every SQLite failure, on open, on a read or on a write, reaches the caller as this error:
/// ``code`` says what kind of failure it is, ``path`` which file, and for a failure SQLite
/// reported, ``sqliteCode`` and ``sqliteMessage`` what SQLite said.
///
/// ```swift
/// do {
///     let persistence = try SQLitePersistence(location: location)
/// } catch let error as SQLiteStoreError where error.code == .notFlatland {
///     // the file belongs to something else: it was left alone
/// } catch let error as SQLiteStoreError where error.code == .corrupt {
///     // damaged: `flatland dump --verify` (or `verify()`) lists the problems
/// }
/// ```
public struct SQLiteStoreError: Error, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    ///
    /// An extensible set of codes (new ones may be added): compare with `==` or match in a
    /// `where` clause, and keep a default branch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String

        /// The file is not a SQLite database at all (`SQLITE_NOTADB`). It was not changed.
        public static let notADatabase = Code(name: "notADatabase")
        /// The file is a SQLite database, but not a Flatland store. It was not changed.
        public static let notFlatland = Code(name: "notFlatland")
        /// The database is damaged (`SQLITE_CORRUPT`, or problems found by
        /// ``SQLitePersistence/verify(quick:)``).
        public static let corrupt = Code(name: "corrupt")
        /// The file was written by a newer Flatland, with a schema this one does not know.
        public static let newerSchema = Code(name: "newerSchema")
        /// This process already has the file open (each file is opened once per process).
        public static let alreadyOpen = Code(name: "alreadyOpen")
        /// The store was closed.
        public static let closed = Code(name: "closed")
        /// The operating system failed a read or a write (`SQLITE_IOERR`): a bad disk, a file
        /// truncated or removed under the store.
        public static let ioError = Code(name: "ioError")
        /// A write to a store opened read-only, or to a file or directory that cannot be
        /// written (`SQLITE_READONLY`).
        public static let readOnly = Code(name: "readOnly")
        /// The disk (or the file size limit) is full (`SQLITE_FULL`).
        public static let full = Code(name: "full")
        /// The file (or its directory, or its WAL companions) cannot be opened
        /// (`SQLITE_CANTOPEN`, `SQLITE_PERM`).
        public static let cannotOpen = Code(name: "cannotOpen")
        /// Another connection holds the database longer than the busy timeout (`SQLITE_BUSY`,
        /// `SQLITE_LOCKED`).
        public static let busy = Code(name: "busy")
        /// The file's directory or the file could not be created or removed.
        public static let fileSystem = Code(name: "fileSystem")
        /// A record that a store file cannot keep so that it reads back as it is: its fields
        /// nest deeper than 512 levels of objects and arrays (the JSON parser's default limit,
        /// the fields' own object included; nothing the default parser reads is that deep), a
        /// `Double` (or `Decimal`) field holds NaN or an infinity, which JSON cannot express, or a `Date` field
        /// a date outside the years 0 to 9999 beyond what a time zone offset of up to 99:59
        /// brings back into them, which ISO 8601 text cannot carry. The commit was
        /// not written.
        public static let unstorable = Code(name: "unstorable")
        /// SQLite reported another error: ``SQLiteStoreError/sqliteCode`` says which.
        public static let sqlite = Code(name: "sqlite")

        public var description: String { name }
    }

    /// What kind of failure this is.
    public var code: Code
    /// The database file.
    public var path: String
    /// What went wrong, in words.
    public var message: String
    /// SQLite's extended result code (`SQLITE_CORRUPT`, `SQLITE_IOERR_SHORT_READ`…), when SQLite
    /// reported the failure.
    public var sqliteCode: Int32?
    /// SQLite's own message, when SQLite reported the failure.
    public var sqliteMessage: String?

    /// An error.
    public init(
        _ code: Code, path: String, message: String, sqliteCode: Int32? = nil, sqliteMessage: String? = nil
    ) {
        self.code = code
        self.path = path
        self.message = message
        self.sqliteCode = sqliteCode
        self.sqliteMessage = sqliteMessage
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
        let said = error.message ?? "\(error.resultCode)"
        let code: Code
        let message: String
        switch error.resultCode {
        case .SQLITE_NOTADB:
            (code, message) = (.notADatabase, "not a SQLite database (or encrypted); the file was left as it is")
        case .SQLITE_CORRUPT:
            (code, message) = (.corrupt, "the database is corrupt (\(said)); the file was left as it is")
        case .SQLITE_IOERR: (code, message) = (.ioError, "an I/O error: \(said)")
        case .SQLITE_READONLY: (code, message) = (.readOnly, "the store cannot be written: \(said)")
        case .SQLITE_FULL: (code, message) = (.full, "the disk is full: \(said)")
        case .SQLITE_CANTOPEN, .SQLITE_PERM: (code, message) = (.cannotOpen, "cannot open the file: \(said)")
        case .SQLITE_BUSY, .SQLITE_LOCKED: (code, message) = (.busy, "the database is busy: \(said)")
        default: (code, message) = (.sqlite, said)
        }
        self.init(
            code, path: path, message: message, sqliteCode: error.extendedResultCode.rawValue,
            sqliteMessage: error.message)
    }
}
