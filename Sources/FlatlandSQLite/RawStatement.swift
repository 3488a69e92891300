import GRDB
import GRDBSQLite

/// A GRDB cached statement driven through SQLite's C API, for the per-record hot paths (the
/// batch insert and the batch lookup): no argument arrays, no row objects. Only these calls
/// ever touch the statement.
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

    func bind(_ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            _ = sqlite3_bind_text(
                statement, index, UnsafeRawPointer(utf8.baseAddress)?.assumingMemoryBound(to: CChar.self),
                Int32(utf8.count), Self.transient)
        }
    }

    func bind(_ index: Int32, blob: [UInt8]) {
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

    func double(_ column: Int32) -> Double? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_double(statement, column)
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = sqlite3_errmsg(connection).map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message)
    }
}
