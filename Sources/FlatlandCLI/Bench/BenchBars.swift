/// The bars `flatland bench` is held to, and how one run measures against them.
///
/// They are the benchmark issue's bars, written down once so that every run says which hold:
/// the table prints them under the results and `--json` gives them as `bars`. A bar whose
/// dataset this run did not measure (a file not found, a seed size not asked for,
/// `--no-streaming`) is reported as not measured, never as met.
struct BenchBar: Equatable {
    /// What a bar compares: one of a dataset's ratios, or the streaming memory's growth.
    enum Metric: String, CaseIterable {
        case ingestVsJSONDecoder = "ingest_vs_jsondecoder"
        case parseVsYAJLRaw = "parse_vs_yajl_raw"
        case ingestVsYAJLRaw = "ingest_vs_yajl_raw"
        /// `streaming.peak_rss_mb_100mb` − `streaming.peak_rss_mb_1mb`, in MB.
        case streamingGrowth = "streaming_peak_rss_mb_100mb_minus_1mb"
    }

    var metric: Metric
    /// The dataset the ratio is taken on; `nil` for the streaming bar.
    var dataset: String?
    /// The bar itself: at least this (ratios), or below it (memory growth).
    var limit: Double

    /// Ratios must reach their bar; memory growth must stay under it.
    var atLeast: Bool { metric != .streamingGrowth }

    /// `>=` or `<`, as the report prints it.
    var comparison: String { atLeast ? ">=" : "<" }

    /// The bars: 3x JSONDecoder, 0.8x raw yajl for the parse and 0.5x for the ingest on
    /// twitter.json and the 10 MB seed-shaped data, and under 16 MB of growth from the 1 MB to
    /// the 100 MB streamed document.
    static let all: [BenchBar] =
        [(Metric.ingestVsJSONDecoder, 3.0), (.parseVsYAJLRaw, 0.8), (.ingestVsYAJLRaw, 0.5)].flatMap { metric, limit in
            ["seed-10MB", "twitter.json"].map { BenchBar(metric: metric, dataset: $0, limit: limit) }
        } + [BenchBar(metric: .streamingGrowth, dataset: nil, limit: 16)]

    /// One bar against one run.
    struct Check {
        var bar: BenchBar
        /// The run's value, to the report's three decimals; `nil` when not measured.
        var value: Double?
        /// Whether the value clears the bar; `nil` when not measured.
        var met: Bool? {
            value.map { bar.atLeast ? $0 >= bar.limit : $0 < bar.limit }
        }
    }

    /// This bar against a run's results and streaming memory.
    func check(results: [BenchResult], streaming: StreamingMemory.Result?) -> Check {
        let result = results.first { $0.name == dataset }
        let raw: Double? =
            switch metric {
            case .streamingGrowth: streaming.map { $0.peakRSSMegabytes100MB - $0.peakRSSMegabytes1MB }
            case .ingestVsJSONDecoder: result?.ingestVsJSONDecoder
            case .parseVsYAJLRaw: result?.parseVsYAJLRaw
            case .ingestVsYAJLRaw: result?.ingestVsYAJLRaw
            }
        // Judged on the value the report prints, so a reader can check the verdict.
        return Check(bar: self, value: raw.flatMap(BenchReport.reported))
    }
}
