import ArgumentParser
import Flatland
import FlatlandJSON
import FlatlandSQLite
import Foundation

/// `flatland ingest`: responses into an untyped store, as an SDK would see them.
struct IngestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Ingest JSON responses into a flat store, one task per file, and show the result.",
        discussion: """
            Every object whose id key holds '<prefix>-<rest>' (prefix [a-z][a-z0-9]*) is an entity
            of type <prefix>. Each FILE is one response, applied in order, all or nothing; the first
            file that fails stops the run with 'error: FILE:LINE:COLUMN: message' (exit 1).
            --dump prints JSON Lines: entities by uuid, tasks in file order, endpoints by name.
            With --store the store is a SQLite file (created if needed, added to if it exists):
            'flatland dump --store PATH' later prints the same JSON Lines. An existing store file is
            checked first (PRAGMA quick_check); a damaged file, or any SQLite error while reading or
            writing it, stops the run with 'error: …' (exit 1). A file that is not a Flatland store
            is refused (exit 2) and left as it is; a file this run created is removed if the run
            cannot even set it up.
            """
    )

    @Option(help: "The request path and query every file is a response to.")
    var endpoint: String?

    @Option(help: "The member holding entity ids.")
    var idKey = "uuid"

    @Option(help: "A member whose number is the entity's data version: older versions are skipped.")
    var versionKey: String?

    @Option(help: "Bytes read and fed per chunk.")
    var chunkSize: Int = 64 * 1024

    @Flag(help: "Print the store and its collections as JSON Lines.")
    var dump = false

    @Option(help: "Keep the store in this SQLite file (created if needed) instead of in memory.")
    var store: String?

    @Argument(help: "The response files, in order (- for standard input).")
    var files: [String]

    func validate() throws {
        try InputFile.validate(chunkSize: chunkSize)
        guard !files.isEmpty else { throw ValidationError("give at least one FILE") }
    }

    func run() throws {
        let store = try Self.openStore(path: self.store, checked: true)
        // Closed explicitly (the store outlives the run): the log is folded into the file, which
        // is then one self-contained file.
        defer { Self.close(store) }
        let options = IngestOptions(resolver: PrefixedIDResolver(key: idKey), versionKey: versionKey)
        var bytes = 0
        var failure: CLIFailure?
        let start = monotonicSeconds()
        for file in files {
            let ingestor = store.makeIngestor(endpoint: endpoint, taskID: file, options: options)
            do {
                let input = try InputFile(path: file)
                try input.forEachChunk(size: chunkSize) { chunk in try ingestor.feed(chunk) }
                bytes += try store.commit(ingestor.finish()).bytes
            } catch let error as IngestError {
                let where_ = error.location.map { "\($0.line):\($0.column): " } ?? ""
                failure = .invalid("\(file):\(where_)\(error.path.map { "\($0): " } ?? "")\(error.message)")
                break
            } catch let error as CLIFailure {
                // An unreadable file stops the run too; the dump still shows the store as it stands.
                failure = error
                break
            } catch {
                // The store's own failure (a SQLite error committing the batch).
                failure = .invalid("\(file): \(error)")
                break
            }
            // A read the store could not make (it reads as absent) is a failure too.
            if let error = store.lastPersistenceError {
                failure = .invalid("\(file): \(error)")
                break
            }
        }
        let seconds = monotonicSeconds() - start
        if dump {
            StoreDump.write(store, idKey: idKey)
        } else {
            let counts = store.countsByPrefix.sorted { $0.key < $1.key }
            print("entities: \(store.count)" + counts.map { "  \($0.key): \($0.value)" }.joined())
            print("collections: \(store.collections.count)")
            print(
                "bytes: \(bytes), seconds: \(formatted(seconds, 3)), MB/s: \(formatted(Double(bytes) / 1e6 / max(seconds, 1e-9), 1))"
            )
        }
        if failure == nil, let error = store.lastPersistenceError { failure = .invalid("\(error)") }
        if let failure { throw failure }
    }
}

extension IngestCommand {
    /// An untyped store: in memory, or in the SQLite file at `path` (read-only when `mode` says
    /// so; first checked with `PRAGMA quick_check` when `checked`).
    static func openStore(
        path: String?, mode: SQLitePersistence.Options.Mode = .readWrite, checked: Bool = false
    ) throws(CLIFailure) -> Store {
        guard let path else { return Store() }
        do {
            let persistence = try SQLitePersistence(path: path, options: .init(mode: mode))
            if checked { try persistence.verify(quick: true).check() }
            return Store(persistence: persistence)
        } catch {
            throw failure(error)
        }
    }

    /// Closes the store's file, if it has one.
    static func close(_ store: Store) { (store.persistence as? SQLitePersistence)?.close() }

    /// The exit a store error gives: 1 for a damaged store or a failed read or write, 2 for a
    /// file that is not a store this build can use (missing, not a database, not Flatland's,
    /// newer, already open).
    static func failure(_ error: SQLiteStoreError) -> CLIFailure {
        let unusable: Set<SQLiteStoreError.Code> = [
            .notADatabase, .notFlatland, .newerSchema, .alreadyOpen, .cannotOpen, .fileSystem,
        ]
        return unusable.contains(error.code) ? .usage(error.description) : .invalid(error.description)
    }
}

/// `flatland dump`: a store file as JSON Lines.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print a SQLite store file as JSON Lines, as 'ingest --dump' prints its store.",
        discussion: """
            The file is opened read-only (it can be dumped from a read-only directory or a full
            disk) and checked first (PRAGMA quick_check). A damaged file, or any SQLite error while
            reading it, ends the run with 'error: …' (exit 1). --verify prints the verdict of a full
            check (PRAGMA integrity_check and the store's own counts) instead of the dump: 'PATH: ok'
            (exit 0), or 'PATH: corrupt, N problems' and one problem per line (exit 1).
            """)

    @Option(help: "The SQLite store file (written by 'ingest --store').")
    var store: String

    @Flag(help: "Check the whole file and print the verdict instead of the dump.")
    var verify = false

    func run() throws {
        guard FileManager.default.fileExists(atPath: store) else { throw CLIFailure.usage("\(store): no such file") }
        if verify { return try verifyStore() }
        let opened = try IngestCommand.openStore(path: store, mode: .readOnly, checked: true)
        defer { IngestCommand.close(opened) }
        StoreDump.write(opened, idKey: "uuid")
        if let error = opened.lastPersistenceError { throw CLIFailure.invalid("\(error)") }
    }

    private func verifyStore() throws {
        let report: SQLiteIntegrityReport
        do {
            let persistence = try SQLitePersistence(path: store, options: .init(mode: .readOnly))
            defer { persistence.close() }
            report = try persistence.verify()
        } catch  where error.code == .corrupt {
            // Too damaged to open: that is the verdict.
            report = SQLiteIntegrityReport(path: store, problems: [error.sqliteMessage ?? error.message])
        } catch {
            throw IngestCommand.failure(error)
        }
        print(report)
        if !report.isOK {
            throw CLIFailure.invalid("\(store): the store is corrupt (\(report.problems.count) problems)")
        }
    }
}

/// The store as JSON Lines: the CLI's dump format.
enum StoreDump {
    static func write(_ store: some StoreReader, idKey: String) {
        var out: [UInt8] = []
        out.reserveCapacity(1 << 16)
        /// One JSON object on its own line, written by `members`.
        func line(kind: String, _ members: (inout JSONWriter) -> Void) {
            var w = JSONWriter()
            w.beginObject()
            w.key("kind")
            w.string(kind)
            members(&w)
            w.endObject()
            out += w.bytes
            out.append(0x0A)
            if out.count > 1 << 16 { flush() }
        }
        func flush() {
            FileHandleOutput.standardOutput.write(String(decoding: out, as: UTF8.self))
            out.removeAll(keepingCapacity: true)
        }
        for id in store.allIDs() {
            // A listed id that cannot be read is the store's failure (lastPersistenceError).
            guard let record = store.record(id: id) else { continue }
            line(kind: "entity") { w in
                w.key("uuid")
                w.string(record.id)
                w.key("type")
                w.string(record.prefix)
                w.key("fields")
                w.value(.object(record.fields))
            }
        }
        for task in store.collections(kind: .task) {
            line(kind: "task") { w in
                w.key("source")
                w.string(task.displayIdentifier)
                w.key("items")
                writeItems(task.items, &w)
            }
        }
        for collection in store.collections(kind: .endpoint).sorted(by: { $0.displayIdentifier < $1.displayIdentifier })
        {
            line(kind: "endpoint") { w in
                w.key("endpoint")
                w.string(collection.displayIdentifier)
                w.key("total")
                if let total = collection.total { w.number(total) } else { w.null() }
                w.key("items")
                writeItems(collection.items, &w)
            }
        }
        flush()
    }

    private static func writeItems(_ items: [String?], _ w: inout JSONWriter) {
        w.beginArray()
        for item in items {
            if let item { w.string(item) } else { w.null() }
        }
        w.endArray()
    }
}
