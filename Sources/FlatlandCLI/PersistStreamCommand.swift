import ArgumentParser
import Flatland
import FlatlandSQLite

/// `flatland persist-stream` (hidden): ingests a stream of batches into a store file, saying
/// after each one that it is committed. The crash test kills it midway and checks the file.
struct PersistStreamCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "persist-stream", abstract: "Ingest numbered batches into a store file (for crash tests).",
        shouldDisplay: false)

    @Option(help: "The SQLite store file.")
    var store: String

    @Option(help: "How many batches.")
    var batches = 1_000_000

    @Option(help: "Items per batch.")
    var items = 200

    /// Batch `k`: the counter `cn-counter` at `k`, holding `items` entities of batch `k`.
    static func batch(_ k: Int, items: Int) -> [UInt8] {
        var text = #"{"uuid":"cn-counter","n":\#(k),"items":["#
        for i in 0..<items {
            if i > 0 { text += "," }
            text += #"{"uuid":"it-\#(k)-\#(i)","batch":\#(k),"pad":"\#(String(repeating: "x", count: 64))"}"#
        }
        text += "]}"
        return Array(text.utf8)
    }

    func run() throws {
        let store = try IngestCommand.openStore(path: store)
        for k in 0..<batches {
            try store.ingest(Self.batch(k, items: items), endpoint: "/counter", taskID: "batch-\(k)")
            FileHandleOutput.standardOutput.write("committed \(k)\n")
        }
    }
}
