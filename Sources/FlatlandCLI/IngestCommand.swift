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
            'flatland dump --store PATH' later prints the same JSON Lines.
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
        let store = try Self.openStore(path: self.store)
        let options = IngestOptions(resolver: PrefixedIDResolver(key: idKey), versionKey: versionKey)
        var bytes = 0
        var failure: CLIFailure?
        let start = monotonicSeconds()
        for file in files {
            let ingestor = store.makeIngestor(endpoint: endpoint, taskID: file, options: options)
            do {
                let input = try InputFile(path: file)
                try input.forEachChunk(size: chunkSize) { chunk in try ingestor.feed(chunk) }
                bytes += try ingestor.finish().bytes
            } catch let error as IngestError {
                let where_ = error.location.map { "\($0.line):\($0.column): " } ?? ""
                failure = .invalid("\(file):\(where_)\(error.path.map { "\($0): " } ?? "")\(error.message)")
                break
            } catch let error as CLIFailure {
                // An unreadable file stops the run too; the dump still shows the store as it stands.
                failure = error
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
        if let failure { throw failure }
    }
}

extension IngestCommand {
    /// An untyped store: in memory, or in the SQLite file at `path`.
    static func openStore(path: String?) throws(CLIFailure) -> Store {
        guard let path else { return Store() }
        do {
            return Store(persistence: try SQLitePersistence(path: path))
        } catch {
            throw CLIFailure.usage(error.description)
        }
    }
}

/// `flatland dump`: a store file as JSON Lines.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print a SQLite store file as JSON Lines, as 'ingest --dump' prints its store.")

    @Option(help: "The SQLite store file (written by 'ingest --store').")
    var store: String

    func run() throws {
        guard FileManager.default.fileExists(atPath: store) else { throw CLIFailure.usage("\(store): no such file") }
        StoreDump.write(try IngestCommand.openStore(path: store), idKey: "uuid")
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
