import FlatlandJSON
import Testing

@testable import FlatlandCLI

/// The issue's bars, judged against a run: met, not met, or not measured, the same in the table
/// and in the JSON report.
@Suite("Benchmark bars")
struct BenchBarsTests {
    /// A dataset of 10 MB whose contenders took the given seconds.
    static func result(
        _ name: String, yajl: Double, parse: Double, ingest: Double, decoder: Double
    ) -> BenchResult {
        BenchResult(
            name: name, bytes: 10_000_000, entities: 1000, yajlRaw: yajl, parse: parse, ingest: ingest,
            jsonDecoder: decoder, jsonSerialization: decoder * 2)
    }

    static let report = BenchReport(
        rounds: 1,
        results: [
            // 4x JSONDecoder, parse at 0.8 of raw yajl exactly, ingest at 0.25 of it.
            result("seed-10MB", yajl: 0.010, parse: 0.0125, ingest: 0.040, decoder: 0.160),
            // 2x JSONDecoder, parse at 0.79, ingest at 0.5 exactly.
            result("twitter.json", yajl: 0.010, parse: 0.010 / 0.79, ingest: 0.020, decoder: 0.040),
        ],
        streaming: StreamingMemory.Result(peakRSSMegabytes1MB: 30, peakRSSMegabytes100MB: 46),
        missing: [], dataDirectory: "/data")

    /// The bars the issue names, in the order the report lists them.
    @Test func theBarsAreTheIssues() {
        #expect(
            BenchBar.all.map { "\($0.metric.rawValue)\($0.comparison)\($0.limit)@\($0.dataset ?? "-")" } == [
                "ingest_vs_jsondecoder>=3.0@seed-10MB", "ingest_vs_jsondecoder>=3.0@twitter.json",
                "parse_vs_yajl_raw>=0.8@seed-10MB", "parse_vs_yajl_raw>=0.8@twitter.json",
                "ingest_vs_yajl_raw>=0.5@seed-10MB", "ingest_vs_yajl_raw>=0.5@twitter.json",
                "streaming_peak_rss_mb_100mb_minus_1mb<16.0@-",
            ])
    }

    @Test func eachBarIsJudgedOnItsDatasetsValue() {
        let checks = Self.report.bars
        #expect(checks.map(\.value) == [4, 2, 0.8, 0.79, 0.25, 0.5, 16])
        // A ratio on its bar meets it; memory growth on its bar does not.
        #expect(checks.map(\.met) == [true, false, true, false, false, true, false])
    }

    @Test func aBarOnADatasetNotMeasuredIsNeitherMetNorFailed() {
        var report = Self.report
        report.results.removeLast()
        report.streaming = nil
        let checks = report.bars
        #expect(checks.filter { $0.bar.dataset == "seed-10MB" }.allSatisfy { $0.met != nil })
        let unmeasured = checks.filter { $0.bar.dataset != "seed-10MB" }
        #expect(unmeasured.count == 4)
        #expect(unmeasured.allSatisfy { $0.value == nil && $0.met == nil })
    }

    @Test func theJSONReportCarriesTheVerdicts() throws {
        var report = Self.report
        report.results.removeLast()
        let json = try JSONValue(parsing: report.json())
        guard case .array(let bars)? = json["bars"] else {
            Issue.record("no bars array")
            return
        }
        #expect(bars.count == BenchBar.all.count)
        let first = bars[0]
        #expect(first["metric"]?.stringValue == "ingest_vs_jsondecoder")
        #expect(first["dataset"]?.stringValue == "seed-10MB")
        #expect(first["comparison"]?.stringValue == ">=")
        #expect(first["bar"]?.numberValue?.text == "3")
        #expect(first["value"]?.numberValue?.text == "4")
        #expect(first["met"] == .bool(true))
        // twitter.json was not measured: no value, no verdict.
        #expect(bars[1]["value"] == .null)
        #expect(bars[1]["met"] == .null)
        // The streaming bar has no dataset.
        #expect(bars[6]["dataset"] == .null)
        #expect(bars[6]["met"] == .bool(false))
        // The bar's value is the dataset's own ratio, as the report prints it.
        #expect(json["datasets"]?["seed-10MB"]?["ingest_vs_jsondecoder"] == first["value"])
    }

    @Test func theTableListsEveryBarWithItsVerdict() throws {
        let lines = Self.report.table().split(separator: "\n")
        let heading = try #require(lines.firstIndex(of: "Bars:"))
        let rows = lines[(heading + 1)...].map { $0.split(separator: " ").map(String.init) }
        #expect(rows.count == BenchBar.all.count)
        #expect(rows[0] == ["ingest_vs_jsondecoder", ">=", "3.0", "seed-10MB", "4.000", "met"])
        #expect(rows[3] == ["parse_vs_yajl_raw", ">=", "0.8", "twitter.json", "0.790", "NOT", "MET"])
        #expect(rows[6].suffix(3) == ["16.000", "NOT", "MET"])
    }
}
