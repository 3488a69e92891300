// A test-only executable for the SQLite crash tests: it commits numbered batches into a store
// file, saying after each one that it is committed, so that a test can kill it with SIGKILL at
// any point and check the file. It is no product: nothing ships it.
//
//   FlatlandCrashHelper stream --store FILE [--batches N] [--items N]
//   FlatlandCrashHelper alongside --store FILE [--batches N] [--items N] [--hang-at K]
//   FlatlandCrashHelper migrate --store FILE --hang-at K
//
// `stream` ingests JSON batches; `alongside` commits changes with rows of their own (table
// `alongside`) written by an `SQLiteTransactionWork` in the same transaction, and with
// `--hang-at K` says `inside K` from inside batch K's work and waits there forever. `migrate`
// opens a file of an older schema, says `migrating K` once the migration rewrote K records (in
// its transaction, not yet committed) and waits there forever; `migrated` if it never got there.
import Flatland
import FlatlandJSON
@_spi(FlatlandInternal) import FlatlandSQLite
import Foundation
import GRDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Batch `k` for `stream`: the counter `cn-counter` at `k`, holding `items` entities of batch `k`.
func streamBatch(_ k: Int, items: Int) -> [UInt8] {
    var text = #"{"uuid":"cn-counter","n":\#(k),"items":["#
    for i in 0..<items {
        if i > 0 { text += "," }
        text += #"{"uuid":"it-\#(k)-\#(i)","batch":\#(k),"pad":"\#(String(repeating: "x", count: 64))"}"#
    }
    text += "]}"
    return Array(text.utf8)
}

/// Batch `k` for `alongside`: the counter `cn-counter` at `k` and `items` entities of batch `k`.
func alongsideChange(_ k: Int, items: Int) -> StoreChange {
    var change = StoreChange()
    change.upsert(id: "cn-counter", fields: ["n": .number(JSONNumber(k))])
    for i in 0..<items {
        change.upsert(id: "it-\(k)-\(i)", fields: ["batch": .number(JSONNumber(k))])
    }
    return change
}

/// Writes `line` and a newline to standard output at once (no buffering: the test reads it live).
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(1, buffer.baseAddress! + offset, buffer.count - offset)
            if n <= 0 { return }
            offset += n
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("FlatlandCrashHelper: \(message)\n".utf8))
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let mode = arguments.first, ["stream", "alongside", "migrate"].contains(mode) else {
    fail("usage: FlatlandCrashHelper stream|alongside|migrate --store FILE [--batches N] [--items N] [--hang-at K]")
}
arguments.removeFirst()
var pairs: [String: String] = [:]
while arguments.count >= 2, arguments[0].hasPrefix("--") {
    pairs[String(arguments[0].dropFirst(2))] = arguments[1]
    arguments.removeFirst(2)
}
let options = pairs
guard arguments.isEmpty, let path = options["store"] else { fail("expected --store FILE and options in pairs") }
@MainActor func number(_ name: String, _ fallback: Int?) -> Int? {
    guard let text = options[name] else { return fallback }
    guard let value = Int(text) else { fail("--\(name) takes a whole number") }
    return value
}
let batches = number("batches", 1_000_000)!
let items = number("items", mode == "stream" ? 200 : 100)!
let hangAt = number("hang-at", nil)

if mode == "migrate" {
    guard let hangAt else { fail("migrate takes --hang-at K") }
    SQLitePersistence.migrationObserver = { done in
        guard done == hangAt else { return }
        say("migrating \(done)")
        while true { sleep(60) }
    }
    do { _ = try SQLitePersistence(path: path) } catch { fail("\(error)") }
    say("migrated")
    exit(0)
}

do {
    let store = Store(persistence: try SQLitePersistence(path: path))
    for k in 0..<batches {
        if mode == "stream" {
            try store.ingest(streamBatch(k, items: items), endpoint: "/counter", taskID: "batch-\(k)")
        } else {
            let work = SQLiteTransactionWork { db in
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS alongside (batch INTEGER NOT NULL, i INTEGER NOT NULL)")
                for i in 0..<items {
                    try db.execute(sql: "INSERT INTO alongside (batch, i) VALUES (?, ?)", arguments: [k, i])
                }
                if k == hangAt {
                    say("inside \(k)")
                    while true { sleep(60) }
                }
            }
            try store.commit(alongsideChange(k, items: items), alongside: work)
        }
        say("committed \(k)")
    }
} catch {
    fail("\(error)")
}
