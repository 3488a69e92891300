import ArgumentParser
import CAllocationCount
import Flatland
import FlatlandFixtures
import FlatlandJSON
import Foundation

/// `flatland bench`: Flatland against raw yajl, JSONDecoder and JSONSerialization, side by side.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Compare Flatland with raw yajl, JSONDecoder and JSONSerialization on the same bytes.",
        discussion: """
            Contenders run interleaved, every other round in reverse order (A B C D E, E D C B A,
            …), and each figure is the median of the rounds, so the machine's drift cancels out
            and no contender always runs after the same one. Build in release mode:
            swift run -c release flatland bench
            """
    )

    @Option(help: "Directory with twitter.json, github_events.json and canada.json.")
    var data = "../shared/data/json"

    @Option(help: "Rounds per contender (the median is reported).")
    var rounds = 5

    @Option(help: "Sizes of the generated seed-shaped datasets, in MB.")
    var seedSizes: [Int] = [1, 10, 100]

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Also draw the throughput as an SVG bar chart into this file.")
    var svg: String?

    @Option(
        help: """
            Only these contenders (yajl, yajl-nocheck, parse, ingest, untyped, jsondecoder, jsondecoder-tuned, \
            jsonserialization), for profiling.
            """)
    var only: [String] = []

    @Flag(help: "Skip the streaming-memory measurement.")
    var noStreaming = false

    @Flag(help: "Also print where the ingest's time goes: reading the response, applying it, freeing the store.")
    var phases = false

    @Flag(help: "Exit 1 unless every bar is met (a bar not measured is not met); print each bar with its figure.")
    var check = false

    /// Bars to judge instead of the issue's (a JSON array, see ``BenchBar/load(path:)``): for the
    /// tests of `--check`, which cannot reach the real bars on tiny data.
    @Option(help: .hidden)
    var barsFile: String?

    @Option(help: .hidden)
    var streamRSS: String?

    func validate() throws {
        guard rounds > 0 else { throw ValidationError("--rounds must be positive") }
    }

    func run() throws {
        if let streamRSS {
            print(try StreamingMemory.child(file: streamRSS))
            return
        }
        var workloads = seedSizes.map { Workload.seed(megabytes: $0) }
        // Read before measuring, so that a bad file fails at once.
        let bars: [BenchBar]?
        do { bars = try barsFile.map(BenchBar.load(path:)) } catch { throw CLIFailure.usage("\(error)") }
        let real = Workload.real(in: data)
        workloads += real.found
        let log = FileHandleOutput.standardError
        if !real.missing.isEmpty {
            log.write(
                "note: not found in \(data): \(real.missing.joined(separator: ", ")) (those datasets are skipped)\n")
        }
        var results: [BenchResult] = []
        for workload in workloads {
            log.write("measuring \(workload.name) (\(workload.bytes.count) bytes, \(rounds) rounds)...\n")
            results.append(try Bench.measure(workload, rounds: rounds, only: Set(only)))
        }
        var streaming: StreamingMemory.Result?
        if !noStreaming {
            log.write("measuring streaming memory (1 MB and 100 MB in 64 KiB chunks)...\n")
            streaming = try StreamingMemory.measure()
        }
        var report = BenchReport(
            rounds: rounds, results: results, streaming: streaming, missing: real.missing, dataDirectory: data)
        // Issue 25 item 2: the collections' bytes per position, on the largest seed dataset
        // (the report gives it at the top level of `--json` and judges its bar).
        if let largest = workloads.filter({ $0.name.hasPrefix("seed-") }).max(by: { $0.bytes.count < $1.bytes.count }),
            only.isEmpty || only.contains("ingest")
        {
            log.write("measuring the collections' bytes per position (\(largest.name))...\n")
            if let memory = try CollectionMemory.measure(largest) {
                log.write(
                    "  \(memory.collections) collections, \(memory.positions) positions, \(memory.bytes) bytes: "
                        + "\((memory.bytesPerPosition * 100).rounded() / 100) bytes per position\n")
                report.collectionBytesPerPosition = memory.bytesPerPosition
            }
        }
        if let bars { report.barsJudged = bars }
        if json {
            print(report.json())
        } else {
            print(report.table())
            if phases { print(report.phasesTable()) }
        }
        if let svg {
            try report.svg().write(toFile: svg, atomically: true, encoding: .utf8)
            log.write("wrote \(svg)\n")
        }
        if check {
            let checks = report.bars
            // The table already ends with the bars; after JSON they go to standard error.
            if json { log.write(report.barsBlock().joined(separator: "\n") + "\n") }
            let failing = checks.filter { $0.met != true }
            guard failing.isEmpty else {
                throw CLIFailure.invalid(
                    "check: \(failing.count) of \(checks.count) bars not met: "
                        + failing.map(\.bar.label).joined(separator: "; "))
            }
            log.write("check: all \(checks.count) bars met\n")
        }
    }
}

/// The medians of one dataset.
struct BenchResult {
    var name: String
    var bytes: Int
    var entities: Int?
    var yajlRaw: Double
    var parse: Double
    var ingest: Double?
    var jsonDecoder: Double?
    /// Raw yajl with its UTF-8 check off (`yajl_dont_validate_strings`).
    var yajlRawNoCheck: Double?
    /// `JSONDecoder`, tuned (see ``TunedDecoders``).
    var jsonDecoderTuned: Double?
    /// The same ingest with no type registered: every entity untyped.
    var untypedIngest: Double?
    var jsonSerialization: Double?
    var mallocsPerEntity: Double?
    var jsonDecoderMallocsPerEntity: Double?
    /// What the stored entities' own values need (see ``StorageFloor``), per entity.
    var mallocFloorPerEntity: Double?
    /// Medians of the ingest's steps, in seconds.
    var ingestPhases: IngestPhases?

    func mbps(_ seconds: Double?) -> Double? { seconds.map { Double(bytes) / 1e6 / $0 } }

    /// Ingest throughput over JSONDecoder's: the same bytes, so the inverse ratio of the times.
    var ingestVsJSONDecoder: Double? { Self.ratio(jsonDecoder, ingest) }
    /// Ingest throughput over raw yajl's.
    var ingestVsYAJLRaw: Double? { Self.ratio(yajlRaw, ingest) }
    /// Parse throughput over raw yajl's.
    var parseVsYAJLRaw: Double? { Self.ratio(yajlRaw, parse) }
    /// Ingest throughput over the tuned JSONDecoder's.
    var ingestVsJSONDecoderTuned: Double? { Self.ratio(jsonDecoderTuned, ingest) }
    /// Parse throughput over raw yajl's without its UTF-8 check.
    var parseVsYAJLRawNoCheck: Double? { Self.ratio(yajlRawNoCheck, parse) }
    /// Untyped ingest throughput over typed ingest's.
    var untypedVsTyped: Double? { Self.ratio(ingest, untypedIngest) }

    private static func ratio(_ baseline: Double?, _ contender: Double?) -> Double? {
        guard let baseline, let contender, contender > 0 else { return nil }
        return baseline / contender
    }
}

/// The steps of one ingest: feeding the response (parse, walk, decoding), applying the batch to
/// the store, and freeing the store and its records.
struct IngestPhases {
    var read: Double
    var apply: Double
    var free: Double
}

enum Bench {
    static let chunkSize = 64 * 1024

    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = monotonicSeconds()
        try body()
        return monotonicSeconds() - start
    }

    static func median(_ values: [Double]) -> Double {
        if values.isEmpty { return .nan }
        let sorted = values.sorted()
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    static func parse(_ w: Workload) throws {
        let parser = JSONStreamParser(handler: NullEventHandler())
        try forEachChunk(w.bytes, size: chunkSize) { try parser.feed($0) }
        try parser.finish()
    }

    /// One ingest into a new store, torn down before it returns; with the time of each step.
    @discardableResult
    static func ingest(_ w: Workload, _ i: Workload.Ingest) throws -> (entities: Int, phases: IngestPhases) {
        let start = monotonicSeconds()
        var read = start
        var applied = start
        var entities = 0
        do {
            let store = Store(registry: i.registry)
            let ingestor = store.makeIngestor(endpoint: "/bench", options: i.options)
            try forEachChunk(w.bytes, size: chunkSize) { try ingestor.feed($0) }
            read = monotonicSeconds()
            try withExtendedLifetime(ingestor) { _ = try store.commit(ingestor.finish()) }
            applied = monotonicSeconds()
            entities = store.count
        }
        let freed = monotonicSeconds()
        return (entities, IngestPhases(read: read - start, apply: applied - read, free: freed - applied))
    }

    /// A store holding what one ingest of the workload stored.
    static func ingestedStore(_ w: Workload, _ i: Workload.Ingest) throws -> Store {
        let store = Store(registry: i.registry)
        let ingestor = store.makeIngestor(endpoint: "/bench", options: i.options)
        try forEachChunk(w.bytes, size: chunkSize) { try ingestor.feed($0) }
        _ = try store.commit(ingestor.finish())
        return store
    }

    /// The calls to `malloc`, `calloc` and `realloc` that `body` makes, or nil where this build
    /// cannot count them (see `allocation_count.h`).
    static func mallocs(_ body: () throws -> Void) rethrows -> Int? {
        guard flatland_allocation_count_available() != 0 else { return nil }
        flatland_allocation_count_start()
        do {
            try body()
        } catch {
            _ = flatland_allocation_count_stop()
            throw error
        }
        return Int(flatland_allocation_count_stop())
    }

    static func measure(_ w: Workload, rounds: Int, only: Set<String> = []) throws -> BenchResult {
        func wanted(_ name: String) -> Bool { only.isEmpty || only.contains(name) }
        var yajl: [Double] = []
        var parse: [Double] = []
        var ingest: [Double] = []
        var phases: [IngestPhases] = []
        var decoder: [Double] = []
        var serialization: [Double] = []
        var yajlNoCheck: [Double] = []
        var decoderTuned: [Double] = []
        var untyped: [Double] = []
        var entities: Int?
        // One untimed warm-up of each, which also checks that every contender accepts the data.
        let valid = w.bytes.withUnsafeBytes { RawYAJL.parse($0, chunkSize: chunkSize) }
        guard valid else { throw CLIFailure.invalid("\(w.name): raw yajl rejects it") }
        try Self.parse(w)
        if let i = w.ingest {
            entities = try Self.ingest(w, i).entities
            let decoded = wanted("jsondecoder") ? try i.jsonDecoder(w.data) : entities!
            if wanted("jsonserialization") { _ = try i.jsonSerialization(w.data) }
            if decoded != entities {
                FileHandleOutput.standardError.write(
                    "note: \(w.name): Flatland stored \(entities!) entities, the Codable model \(decoded)\n")
            }
            if wanted("jsondecoder-tuned") {
                let tuned = try i.jsonDecoderTuned(w.data)
                guard tuned == decoded else {
                    throw CLIFailure.invalid(
                        "\(w.name): the tuned JSONDecoder kept \(tuned) entities, the plain one \(decoded)")
                }
            }
            if wanted("untyped") {
                let stored = try Self.ingest(w, i.untyped).entities
                guard stored == entities else {
                    throw CLIFailure.invalid(
                        "\(w.name): the untyped ingest stored \(stored) entities, the typed one \(entities!)")
                }
            }
        }
        // One timed run of each contender per round, every other round in reverse order
        // (A B C D E, E D C B A, …). A contender that runs right after another has freed a
        // large heap can be slowed by what the system does with the memory given back (on this
        // machine kind, raw yajl on seed-100MB ran at 250 instead of 650 MB/s whenever it
        // followed JSONSerialization); this way no contender always follows the same one, and
        // the median leaves out the rounds that paid for a neighbour.
        var contenders: [() throws -> Void] = []
        if wanted("yajl") {
            contenders.append {
                yajl.append(time { _ = w.bytes.withUnsafeBytes { RawYAJL.parse($0, chunkSize: chunkSize) } })
            }
        }
        if wanted("yajl-nocheck") {
            contenders.append {
                yajlNoCheck.append(
                    time {
                        _ = w.bytes.withUnsafeBytes { RawYAJL.parse($0, chunkSize: chunkSize, validatesUTF8: false) }
                    })
            }
        }
        if wanted("parse") { contenders.append { parse.append(try time { try Self.parse(w) }) } }
        if let i = w.ingest {
            if wanted("ingest") {
                contenders.append {
                    var steps: IngestPhases?
                    ingest.append(try time { steps = try Self.ingest(w, i).phases })
                    if let steps { phases.append(steps) }
                }
            }
            if wanted("untyped") {
                let untypedIngest = i.untyped
                contenders.append { untyped.append(try time { try Self.ingest(w, untypedIngest) }) }
            }
            if wanted("jsondecoder") {
                contenders.append { decoder.append(try time { _ = try i.jsonDecoder(w.data) }) }
            }
            if wanted("jsondecoder-tuned") {
                contenders.append { decoderTuned.append(try time { _ = try i.jsonDecoderTuned(w.data) }) }
            }
            if wanted("jsonserialization") {
                contenders.append { serialization.append(try time { _ = try i.jsonSerialization(w.data) }) }
            }
        }
        for round in 0..<rounds {
            for contender in round % 2 == 0 ? contenders : contenders.reversed() { try contender() }
        }
        var result = BenchResult(
            name: w.name, bytes: w.bytes.count, entities: entities, yajlRaw: median(yajl), parse: median(parse))
        result.yajlRawNoCheck = yajlNoCheck.isEmpty ? nil : median(yajlNoCheck)
        if let i = w.ingest, let entities, entities > 0 {
            result.ingest = median(ingest)
            result.jsonDecoder = median(decoder)
            result.jsonSerialization = median(serialization)
            result.jsonDecoderTuned = decoderTuned.isEmpty ? nil : median(decoderTuned)
            result.untypedIngest = untyped.isEmpty ? nil : median(untyped)
            if !phases.isEmpty {
                result.ingestPhases = IngestPhases(
                    read: median(phases.map(\.read)), apply: median(phases.map(\.apply)),
                    free: median(phases.map(\.free)))
            }
            if let count = try mallocs({ try Self.ingest(w, i) }) {
                result.mallocsPerEntity = Double(count) / Double(entities)
            }
            if let floor = StorageFloor.mallocs(of: try Self.ingestedStore(w, i)) {
                result.mallocFloorPerEntity = Double(floor) / Double(entities)
            }
            if let count = try mallocs({ _ = try i.jsonDecoder(w.data) }) {
                result.jsonDecoderMallocsPerEntity = Double(count) / Double(entities)
            }
        }
        return result
    }
}
