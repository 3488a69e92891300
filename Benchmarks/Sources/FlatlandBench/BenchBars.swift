import FlatlandJSON
import Foundation

/// The bars `flatland bench` is held to, and how one run measures against them.
///
/// They are the benchmark issue's bars, written down once so that every run says which hold:
/// the table prints them under the results, `--json` gives them as `bars`, and `--check` exits 1
/// unless every one is met. A bar whose dataset this run did not measure (a file not found, a
/// seed size not asked for, `--no-streaming`) is reported as not measured, never as met.
struct BenchBar: Equatable {
    /// What a bar compares: one of a dataset's ratios, the streaming memory's growth, or the
    /// collections' bytes per position.
    enum Metric: String, CaseIterable {
        /// Typed ingest over the tuned `JSONDecoder` (one reused decoder and date parser).
        case ingestVsJSONDecoderTuned = "ingest_vs_jsondecoder_tuned"
        /// Typed ingest over the `JSONDecoder` most SDKs write (a date format style per date).
        case ingestVsJSONDecoder = "ingest_vs_jsondecoder"
        /// The strict parse over raw yajl with its own UTF-8 check.
        case parseVsYAJLRaw = "parse_vs_yajl_raw"
        /// The strict parse over raw yajl without its UTF-8 check.
        case parseVsYAJLRawNoCheck = "parse_vs_yajl_raw_nocheck"
        case ingestVsYAJLRaw = "ingest_vs_yajl_raw"
        /// Untyped ingest (no type registered) over the typed ingest of the same bytes.
        case untypedVsTyped = "untyped_vs_typed"
        /// `streaming.peak_rss_mb_100mb` − `streaming.peak_rss_mb_1mb`, in MB.
        case streamingGrowth = "streaming_peak_rss_mb_100mb_minus_1mb"
        /// The top-level `collection_bytes_per_position` (issue 25 item 2), when measured.
        case collectionBytesPerPosition = "collection_bytes_per_position"

        /// Whether the metric belongs to a dataset (and a bar on it names one).
        var isPerDataset: Bool { self != .streamingGrowth && self != .collectionBytesPerPosition }
    }

    /// How the value must stand against the limit.
    enum Comparison: String {
        case atLeast = ">="
        case below = "<"
        case atMost = "<="
    }

    var metric: Metric
    /// The dataset the ratio is taken on; `nil` for the top-level metrics.
    var dataset: String?
    var comparison: Comparison
    /// The bar itself.
    var limit: Double

    init(_ metric: Metric, _ comparison: Comparison, _ limit: Double, on dataset: String? = nil) {
        self.metric = metric
        self.dataset = dataset
        self.comparison = comparison
        self.limit = limit
    }

    /// The bars (issue 25, item 6): typed ingest 3x the tuned JSONDecoder on the 10 MB
    /// seed-shaped data and 2.5x on twitter.json and github_events.json; the parse 0.8x raw yajl
    /// with its UTF-8 check on the same three; untyped ingest 0.6x typed on seed-10MB and
    /// twitter.json; under 16 MB of growth from the 1 MB to the 100 MB streamed document; and at
    /// most 16 bytes per collection position (listed only when a run measures it: see
    /// ``BenchReport/bars``).
    static let all: [BenchBar] = [
        BenchBar(.ingestVsJSONDecoderTuned, .atLeast, 3.0, on: "seed-10MB"),
        BenchBar(.ingestVsJSONDecoderTuned, .atLeast, 2.5, on: "twitter.json"),
        BenchBar(.ingestVsJSONDecoderTuned, .atLeast, 2.5, on: "github_events.json"),
        BenchBar(.parseVsYAJLRaw, .atLeast, 0.8, on: "seed-10MB"),
        BenchBar(.parseVsYAJLRaw, .atLeast, 0.8, on: "twitter.json"),
        BenchBar(.parseVsYAJLRaw, .atLeast, 0.8, on: "github_events.json"),
        BenchBar(.untypedVsTyped, .atLeast, 0.6, on: "seed-10MB"),
        BenchBar(.untypedVsTyped, .atLeast, 0.6, on: "twitter.json"),
        BenchBar(.streamingGrowth, .below, 16),
        BenchBar(.collectionBytesPerPosition, .atMost, 16),
    ]

    /// One bar against one run.
    struct Check {
        var bar: BenchBar
        /// The run's value, to the report's three decimals; `nil` when not measured.
        var value: Double?
        /// Whether the value clears the bar; `nil` when not measured.
        var met: Bool? {
            value.map { v in
                switch bar.comparison {
                case .atLeast: v >= bar.limit
                case .below: v < bar.limit
                case .atMost: v <= bar.limit
                }
            }
        }

        /// `met`, `NOT MET` or `not measured`, as the report prints it.
        var verdict: String {
            switch met {
            case true?: "met"
            case false?: "NOT MET"
            case nil: "not measured"
            }
        }
    }

    /// This bar against a run's results, streaming memory and collection bytes per position.
    func check(
        results: [BenchResult], streaming: StreamingMemory.Result?, collectionBytesPerPosition: Double? = nil
    ) -> Check {
        let result = results.first { $0.name == dataset }
        let raw: Double? =
            switch metric {
            case .streamingGrowth: streaming.map { $0.peakRSSMegabytes100MB - $0.peakRSSMegabytes1MB }
            case .collectionBytesPerPosition: collectionBytesPerPosition
            case .ingestVsJSONDecoderTuned: result?.ingestVsJSONDecoderTuned
            case .ingestVsJSONDecoder: result?.ingestVsJSONDecoder
            case .parseVsYAJLRaw: result?.parseVsYAJLRaw
            case .parseVsYAJLRawNoCheck: result?.parseVsYAJLRawNoCheck
            case .ingestVsYAJLRaw: result?.ingestVsYAJLRaw
            case .untypedVsTyped: result?.untypedVsTyped
            }
        // Judged on the value the report prints, so a reader can check the verdict.
        return Check(bar: self, value: raw.flatMap(BenchReport.reported))
    }

    /// A bars file is malformed: what and where.
    struct FileError: Error, CustomStringConvertible {
        enum Code: String { case unreadable, notJSON, notAnArray, badBar }
        var code: Code
        var path: String
        var message: String
        var description: String { "\(path): \(message) (\(code.rawValue))" }
    }

    /// Bars read from a JSON file instead of ``all`` (the hidden `--bars-file`, for tests): an
    /// array of `{"metric": …, "dataset": … or null, "comparison": ">=" | "<" | "<=", "bar": N}`.
    static func load(path: String) throws(FileError) -> [BenchBar] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileError(code: .unreadable, path: path, message: "cannot read the file")
        }
        let json: JSONValue
        do { json = try JSONValue(parsing: [UInt8](data)) } catch {
            throw FileError(code: .notJSON, path: path, message: "not JSON: \(error)")
        }
        guard case .array(let items) = json else {
            throw FileError(code: .notAnArray, path: path, message: "expected an array of bars")
        }
        var bars: [BenchBar] = []
        for (i, item) in items.enumerated() {
            guard let metric = item["metric"]?.stringValue.flatMap(Metric.init(rawValue:)),
                let comparison = item["comparison"]?.stringValue.flatMap(Comparison.init(rawValue:)),
                let limit = item["bar"]?.numberValue.flatMap({ Double($0.text) })
            else {
                throw FileError(
                    code: .badBar, path: path,
                    message: "bar \(i): needs a known metric, a comparison (>=, <, <=) and a numeric bar")
            }
            let dataset = item["dataset"]?.stringValue
            guard metric.isPerDataset == (dataset != nil) else {
                throw FileError(
                    code: .badBar, path: path,
                    message: "bar \(i): \(metric.rawValue) " + (metric.isPerDataset ? "needs" : "takes no") + " dataset"
                )
            }
            bars.append(BenchBar(metric, comparison, limit, on: dataset))
        }
        return bars
    }
}

extension BenchBar {
    /// `metric comparison bar on dataset`, for messages.
    var label: String {
        "\(metric.rawValue) \(comparison.rawValue) \(limit)" + (dataset.map { " on \($0)" } ?? "")
    }
}
