// The ingest measured by instruction count: one pass of `Store.ingest` over a dataset, in a
// function callgrind's `--toggle-collect` names. Built and run by `scripts/callgrind-ingest.sh`.
import Flatland
import FlatlandFixtures
import FlatlandJSON
import Foundation

struct Dataset {
    let bytes: [UInt8]
    let registry: EntityRegistry
    let options: IngestOptions
}

func dataset(_ name: String, dataDirectory: String) -> Dataset? {
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
    try store.ingest(d.bytes, endpoint: "/bench", options: d.options)
    return store.count
}

/// The pass callgrind counts (the warm-up pass before it is not counted).
@inline(never)
func callgrindMeasuredIngest(_ d: Dataset) throws -> Int { try ingestPass(d) }

@main
enum CallgrindIngest {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let d = dataset(arguments[1], dataDirectory: arguments[2]) else {
            FileHandle.standardError.write(Data("usage: callgrind-ingest DATASET DATA_DIR (dataset missing?)\n".utf8))
            exit(2)
        }
        _ = try ingestPass(d)
        let entities = try callgrindMeasuredIngest(d)
        print("bytes \(d.bytes.count) entities \(entities)")
    }
}
