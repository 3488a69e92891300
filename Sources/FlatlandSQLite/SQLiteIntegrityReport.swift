/// What ``SQLitePersistence/verify(quick:)`` found in a store file.
///
/// ```swift
/// let report = try persistence.verify()
/// if !report.isOK { print(report) }  // one problem per line
/// try report.check()                 // or: throw SQLiteStoreError(.corrupt) listing them
/// ```
public struct SQLiteIntegrityReport: Sendable, Hashable, CustomStringConvertible {
    /// The database file.
    public var path: String
    /// The problems found, in SQLite's words (`PRAGMA integrity_check`) and Flatland's (counts
    /// that disagree with the records, a record whose stored fields are damaged, a collection
    /// whose row is); empty when the file is sound.
    public var problems: [String]

    /// A report.
    public init(path: String, problems: [String]) {
        self.path = path
        self.problems = problems
    }

    /// Whether no problem was found.
    public var isOK: Bool { problems.isEmpty }

    /// `ok`, or the number of problems and one line per problem.
    public var description: String {
        guard !isOK else { return "\(path): ok" }
        let count = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
        return (["\(path): corrupt, \(count)"] + problems.map { "  " + $0 }).joined(separator: "\n")
    }

    /// Throws ``SQLiteStoreError/Code-swift.struct/corrupt``, listing the problems, unless the
    /// file is sound.
    public func check() throws(SQLiteStoreError) {
        guard !isOK else { return }
        throw SQLiteStoreError(
            .corrupt, path: path,
            message: "the database is corrupt: " + problems.prefix(10).joined(separator: "; ")
                + (problems.count > 10 ? "; … (\(problems.count) problems)" : ""))
    }
}
