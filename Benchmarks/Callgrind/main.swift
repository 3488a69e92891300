// The ingest measured by instruction count: one pass of `Store.ingest` over a dataset, in a
// function callgrind's `--toggle-collect` names. Built and run by `scripts/callgrind-ingest.sh`.
// FLATLAND_CALLGRIND_MODE=parse measures FlatlandJSON's strict parse alone (a handler that does
// nothing), =yajl raw libyajl with its UTF-8 check and callbacks that do nothing, as
// `flatland bench`'s contenders do, in the same 64 KiB chunks.
import CYAJL
import Flatland
import FlatlandFixtures
import FlatlandJSON
import Foundation

struct Dataset {
    let bytes: [UInt8]
    let registry: EntityRegistry
    let options: IngestOptions
    /// The request's path and query, as a pull's page has one.
    var endpoint = "/bench"
}

/// One page of 50 rows of an offline pull (v2: the system properties beside each row's fields),
/// with the query the pull sends: the fixed cost of one response of a paged read.
func pullPage() -> Dataset {
    var rows: [String] = []
    for i in 0..<50 {
        let stamp = "2026-11-26T10:\(10 + i / 10):\(10 + i % 50).\(100 + i)000Z"
        rows.append(
            "{\"id\":\"t-row\(100_000 + i)\",\"text\":\"Row number \(i) of the table\",\"complete\":\(i % 2 == 0),"
                + "\"priority\":\(i % 5),\"createdAt\":\"\(stamp)\",\"updatedAt\":\"\(stamp)\",\"version\":\"\(i + 7)\","
                + "\"deleted\":false}")
    }
    return Dataset(
        bytes: Array("[\(rows.joined(separator: ","))]".utf8), registry: EntityRegistry(), options: IngestOptions(),
        endpoint: "/tables/benchpull?$filter=(updatedAt%20ge%20datetimeoffset'2026-11-26T10%3A10%3A10.100000Z')"
            + "&$orderby=updatedAt&$skip=0&$top=50&__includeDeleted=true")
}

func dataset(_ name: String, dataDirectory: String) -> Dataset? {
    // A table's rows: untyped whatever FLATLAND_UNTYPED says, as a pull ingests them.
    if name == "pull-page" { return pullPage() }
    guard let typed = typedDataset(name, dataDirectory: dataDirectory) else { return nil }
    // FLATLAND_UNTYPED=1: the same bytes and identity rules with no type registered, so every
    // entity is untyped (the untyped path of issue 25).
    if ProcessInfo.processInfo.environment["FLATLAND_UNTYPED"] == "1" {
        return Dataset(bytes: typed.bytes, registry: EntityRegistry(), options: typed.options)
    }
    return typed
}

func typedDataset(_ name: String, dataDirectory: String) -> Dataset? {
    switch name {
    case "seed-1MB":
        var generator = SeedGenerator(seed: 2026)
        return Dataset(
            bytes: generator.document(approximateBytes: 1_000_000), registry: seedFixtureRegistry(),
            options: IngestOptions())
    case "twitter.json":
        guard let data = FileManager.default.contents(atPath: dataDirectory + "/twitter.json") else { return nil }
        return Dataset(
            bytes: [UInt8](data), registry: Twitter.registry(), options: IngestOptions(resolver: Twitter.resolver))
    case "github_events.json":
        guard let data = FileManager.default.contents(atPath: dataDirectory + "/github_events.json") else {
            return nil
        }
        return Dataset(
            bytes: [UInt8](data), registry: GitHub.registry(), options: IngestOptions(resolver: GitHub.resolver))
    default:
        return nil
    }
}

/// One ingest into a new store, torn down before it returns.
@inline(never)
func ingestPass(_ d: Dataset) throws -> Int {
    let store = Store(registry: d.registry)
    try store.ingest(d.bytes, endpoint: d.endpoint, options: d.options)
    return store.count
}

/// The pass callgrind counts (the warm-up pass before it is not counted).
@inline(never)
func callgrindMeasuredIngest(_ d: Dataset) throws -> Int { try ingestPass(d) }

/// Feeds `bytes` in 64 KiB chunks, as `flatland bench` does.
func forEachChunk(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
    try bytes.withUnsafeBytes { all in
        var offset = 0
        while offset < all.count {
            let end = min(all.count, offset + 64 * 1024)
            try body(UnsafeRawBufferPointer(rebasing: all[offset..<end]))
            offset = end
        }
    }
}

/// One strict parse with a handler that does nothing; the events it delivered.
@inline(never)
func parsePass(_ d: Dataset) throws -> Int {
    let handler = NullEventHandler()
    let parser = JSONStreamParser(handler: handler)
    try forEachChunk(d.bytes) { try parser.feed($0) }
    try parser.finish()
    return handler.events
}

nonisolated(unsafe) let nullCallbacks: UnsafeMutablePointer<yajl_callbacks> = {
    let table = UnsafeMutablePointer<yajl_callbacks>.allocate(capacity: 1)
    table.initialize(
        to: yajl_callbacks(
            yajl_null: { _ in 1 }, yajl_boolean: { _, _ in 1 }, yajl_integer: nil, yajl_double: nil,
            yajl_number: { _, _, _ in 1 }, yajl_string: { _, _, _ in 1 }, yajl_start_map: { _ in 1 },
            yajl_map_key: { _, _, _ in 1 }, yajl_end_map: { _ in 1 }, yajl_start_array: { _ in 1 },
            yajl_end_array: { _ in 1 }))
    return table
}()

/// The parse pass callgrind counts (the warm-up pass before it is not counted).
@inline(never)
func callgrindMeasuredParse(_ d: Dataset) throws -> Int { try parsePass(d) }

/// One raw libyajl parse (its UTF-8 check on) with callbacks that do nothing; 1 when valid.
@inline(never)
func yajlPass(_ d: Dataset) -> Int {
    guard let handle = yajl_alloc(nullCallbacks, nil, nil) else { return 0 }
    defer { yajl_free(handle) }
    var ok = true
    forEachChunk(d.bytes) { chunk in
        guard ok else { return }
        ok = yajl_parse(handle, chunk.baseAddress!.assumingMemoryBound(to: UInt8.self), chunk.count) == yajl_status_ok
    }
    return ok && yajl_complete_parse(handle) == yajl_status_ok ? 1 : 0
}

/// The raw libyajl pass callgrind counts (the warm-up pass before it is not counted).
@inline(never)
func callgrindMeasuredYAJL(_ d: Dataset) -> Int { yajlPass(d) }

@main
enum CallgrindIngest {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let d = dataset(arguments[1], dataDirectory: arguments[2]) else {
            FileHandle.standardError.write(Data("usage: callgrind-ingest DATASET DATA_DIR (dataset missing?)\n".utf8))
            exit(2)
        }
        switch ProcessInfo.processInfo.environment["FLATLAND_CALLGRIND_MODE"] ?? "ingest" {
        case "parse":
            _ = try parsePass(d)
            print("bytes \(d.bytes.count) events \(try callgrindMeasuredParse(d))")
        case "yajl":
            _ = yajlPass(d)
            print("bytes \(d.bytes.count) valid \(callgrindMeasuredYAJL(d))")
        default:
            _ = try ingestPass(d)
            let entities = try callgrindMeasuredIngest(d)
            print("bytes \(d.bytes.count) entities \(entities)")
        }
    }
}
