import GRDB
import GRDBSQLite

/// A GRDB cached statement driven through SQLite's C API: for the per-record hot paths (the
/// batch insert and the batch lookup: no argument arrays, no row objects), and for every
/// statement that binds or reads text.
///
/// Text is bound and read by its byte length, never as a C string: GRDB binds a `String`
/// with length -1 and reads one with `String(cString:)`, which cut an id such as `"u-a\u{0}b"`
/// at its NUL (three such ids read back as the same `"u-a"`). So every id, display identifier,
/// index value and collection item goes through ``bind(_:_:)-(_,String)`` and ``text(_:)``.
struct RawStatement {
    let statement: SQLiteStatement
    let connection: SQLiteConnection

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql).sqliteStatement
        guard let connection = db.sqliteConnection else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "the connection is closed")
        }
        self.connection = connection
    }

    /// SQLite copies what it is given.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    /// Resets the statement for a run that binds every parameter again (the per-record
    /// statements): the old values are overwritten, so they need no clearing.
    func resetForRebinding() { sqlite3_reset(statement) }

    func bind(_ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            _ = sqlite3_bind_text(
                statement, index, UnsafeRawPointer(utf8.baseAddress)?.assumingMemoryBound(to: CChar.self),
                Int32(utf8.count), Self.transient)
        }
    }

    func bind(_ index: Int32, blob: [UInt8]) {
        // An empty buffer may have no address, and a null pointer would bind NULL.
        guard !blob.isEmpty else {
            sqlite3_bind_zeroblob(statement, index, 0)
            return
        }
        blob.withUnsafeBytes { bytes in
            _ = sqlite3_bind_blob(statement, index, bytes.baseAddress, Int32(bytes.count), Self.transient)
        }
    }

    func bind(_ index: Int32, _ value: Int) { sqlite3_bind_int64(statement, index, Int64(value)) }

    func bind(_ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    /// Runs a statement that returns no rows.
    func run() throws {
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE else { throw error(code) }
    }

    /// Steps to the next row; false when there is none.
    func next() throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw error(code)
        }
    }

    /// The number of rows the last statement changed.
    var changes: Int { Int(sqlite3_changes(connection)) }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    /// An integer column that may be NULL.
    func optionalInt(_ column: Int32) -> Int? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : int(column)
    }

    func double(_ column: Int32) -> Double? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_double(statement, column)
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = sqlite3_errmsg(connection).map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
    }
}

/// A value bound to a statement parameter by ``RawStatement``: text by its byte length.
protocol RawBindable {
    func bind(to statement: RawStatement, at index: Int32)
}

extension String: RawBindable {
    func bind(to statement: RawStatement, at index: Int32) { statement.bind(index, self) }
}

extension Int: RawBindable {
    func bind(to statement: RawStatement, at index: Int32) { statement.bind(index, self) }
}

extension Int64: RawBindable {
    func bind(to statement: RawStatement, at index: Int32) { sqlite3_bind_int64(statement.statement, index, self) }
}

extension Array: RawBindable where Element == UInt8 {
    func bind(to statement: RawStatement, at index: Int32) { statement.bind(index, blob: self) }
}

extension Optional: RawBindable where Wrapped: RawBindable {
    func bind(to statement: RawStatement, at index: Int32) {
        if let value = self {
            value.bind(to: statement, at: index)
        } else {
            sqlite3_bind_null(statement.statement, index)
        }
    }
}

extension RawStatement {
    /// Resets the statement and binds `arguments` to its parameters, in order.
    func bind(_ arguments: [any RawBindable]) {
        reset()
        for (offset, argument) in arguments.enumerated() { argument.bind(to: self, at: Int32(offset + 1)) }
    }

    /// Runs `sql` (a statement returning no rows) with `arguments`.
    static func execute(_ db: Database, _ sql: String, _ arguments: [any RawBindable] = []) throws {
        let statement = try RawStatement(db, sql: sql)
        statement.bind(arguments)
        defer { statement.reset() }
        try statement.run()
    }

    /// Every row of `sql` with `arguments`, each read by `row`.
    static func all<T>(
        _ db: Database, _ sql: String, _ arguments: [any RawBindable] = [], _ row: (RawStatement) throws -> T
    ) throws -> [T] {
        let statement = try RawStatement(db, sql: sql)
        statement.bind(arguments)
        defer { statement.reset() }
        var rows: [T] = []
        while try statement.next() { rows.append(try row(statement)) }
        return rows
    }

    /// The first row of `sql` with `arguments`, read by `row`; nil when there is none.
    static func one<T>(
        _ db: Database, _ sql: String, _ arguments: [any RawBindable] = [], _ row: (RawStatement) throws -> T
    ) throws -> T? {
        let statement = try RawStatement(db, sql: sql)
        statement.bind(arguments)
        defer { statement.reset() }
        return try statement.next() ? row(statement) : nil
    }
}
