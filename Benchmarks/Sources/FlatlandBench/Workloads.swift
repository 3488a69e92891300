import Flatland
import FlatlandFixtures
import FlatlandJSON
import Foundation

/// One dataset and how each contender reads it.
struct Workload {
    let name: String
    let bytes: [UInt8]
    let data: Data
    /// Nil for parse-only datasets (numbers, no entities).
    let ingest: Ingest?

    struct Ingest {
        let registry: EntityRegistry
        let options: IngestOptions
        /// `JSONDecoder` into Codable models, inserted into dictionaries; returns the entity count.
        let jsonDecoder: (Data) throws -> Int
        /// The same, tuned (see ``TunedDecoders``): the same models and entity count.
        let jsonDecoderTuned: (Data) throws -> Int
        /// `JSONSerialization` mapped by hand into the same models; returns the entity count.
        let jsonSerialization: (Data) throws -> Int

        /// The same bytes and identity rules with no type registered: every entity untyped.
        var untyped: Ingest {
            Ingest(
                registry: EntityRegistry(), options: options, jsonDecoder: jsonDecoder,
                jsonDecoderTuned: jsonDecoderTuned, jsonSerialization: jsonSerialization)
        }
    }

    init(name: String, bytes: [UInt8], ingest: Ingest?) {
        self.name = name
        self.bytes = bytes
        self.data = Data(bytes)
        self.ingest = ingest
    }

    static func seed(megabytes: Int) -> Workload {
        let tuned = TunedDecoders()
        var generator = SeedGenerator(seed: 2026)
        let bytes = generator.document(approximateBytes: megabytes * 1_000_000)
        return Workload(
            name: "seed-\(megabytes)MB", bytes: bytes,
            ingest: Ingest(
                registry: seedFixtureRegistry(), options: IngestOptions(),
                jsonDecoder: { try SeedCodable.decode($0).count },
                jsonDecoderTuned: { try tuned.seed($0).count },
                jsonSerialization: { try SeedCodable.serialization($0).count }))
    }

    /// The real documents found in `directory`, and the names of those that were not.
    static func real(in directory: String) -> (found: [Workload], missing: [String]) {
        var found: [Workload] = []
        var missing: [String] = []
        let tuned = TunedDecoders()
        func load(_ file: String) -> [UInt8]? {
            FileManager.default.contents(atPath: directory + "/" + file).map { [UInt8]($0) }
        }
        if let bytes = load("twitter.json") {
            found.append(
                Workload(
                    name: "twitter.json", bytes: bytes,
                    ingest: Ingest(
                        registry: Twitter.registry(), options: IngestOptions(resolver: Twitter.resolver),
                        jsonDecoder: { try Twitter.decode($0).count },
                        jsonDecoderTuned: { try tuned.twitter($0).count },
                        jsonSerialization: { try Twitter.serialization($0).count })))
        } else {
            missing.append("twitter.json")
        }
        if let bytes = load("github_events.json") {
            found.append(
                Workload(
                    name: "github_events.json", bytes: bytes,
                    ingest: Ingest(
                        registry: GitHub.registry(), options: IngestOptions(resolver: GitHub.resolver),
                        jsonDecoder: { try GitHub.decode($0).count },
                        jsonDecoderTuned: { try tuned.github($0).count },
                        jsonSerialization: { try GitHub.serialization($0).count })))
        } else {
            missing.append("github_events.json")
        }
        if let bytes = load("canada.json") {
            found.append(Workload(name: "canada.json", bytes: bytes, ingest: nil))
        } else {
            missing.append("canada.json")
        }
        return (found, missing)
    }
}

/// Feeds `bytes` in chunks of `chunkSize`.
func forEachChunk(_ bytes: [UInt8], size chunkSize: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
    try bytes.withUnsafeBytes { all in
        var offset = 0
        while offset < all.count {
            let end = min(all.count, offset + chunkSize)
            try body(UnsafeRawBufferPointer(rebasing: all[offset..<end]))
            offset = end
        }
    }
}
