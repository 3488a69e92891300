import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandBench

/// The issue's bars, judged against a run: met, not met, or not measured, the same in the table
/// and in the JSON report.
@Suite("Benchmark bars")
struct BenchBarsTests {
    /// A dataset of 10 MB whose contenders took the given seconds (the tuned JSONDecoder `tuned`,
    /// the untyped ingest `untyped`).
    static func result(
        _ name: String, yajl: Double, parse: Double, ingest: Double, decoder: Double, tuned: Double,
        untyped: Double
    ) -> BenchResult {
        BenchResult(
            name: name, bytes: 10_000_000, entities: 1000, yajlRaw: yajl, parse: parse, ingest: ingest,
            jsonDecoder: decoder, yajlRawNoCheck: yajl / 2, jsonDecoderTuned: tuned, untypedIngest: untyped,
            jsonSerialization: decoder * 2)
    }

    static let report = BenchReport(
        rounds: 1,
        results: [
            // 3x the tuned JSONDecoder exactly, parse at 0.8 of raw yajl exactly, untyped at 0.5.
            result(
                "seed-10MB", yajl: 0.010, parse: 0.0125, ingest: 0.040, decoder: 0.160, tuned: 0.120,
                untyped: 0.080),
            // 2x the tuned JSONDecoder, parse at 0.79, untyped at 0.6 exactly.
            result(
                "twitter.json", yajl: 0.010, parse: 0.010 / 0.79, ingest: 0.020, decoder: 0.060, tuned: 0.040,
                untyped: 0.020 / 0.6),
        ],
        streaming: StreamingMemory.Result(peakRSSMegabytes1MB: 30, peakRSSMegabytes100MB: 46),
        missing: [], dataDirectory: "/data")

    /// The bars the issue names, in the order the report lists them.
    @Test func theBarsAreTheIssues() {
        #expect(
            BenchBar.all.map { "\($0.metric.rawValue)\($0.comparison.rawValue)\($0.limit)@\($0.dataset ?? "-")" } == [
                "ingest_vs_jsondecoder_tuned>=3.0@seed-10MB", "ingest_vs_jsondecoder_tuned>=2.5@twitter.json",
                "ingest_vs_jsondecoder_tuned>=2.5@github_events.json", "parse_vs_yajl_raw>=0.8@seed-10MB",
                "parse_vs_yajl_raw>=0.8@twitter.json", "parse_vs_yajl_raw>=0.8@github_events.json",
                "untyped_vs_typed>=0.6@seed-10MB", "untyped_vs_typed>=0.6@twitter.json",
                "streaming_peak_rss_mb_100mb_minus_1mb<16.0@-", "collection_bytes_per_position<=16.0@-",
            ])
    }

    @Test func eachBarIsJudgedOnItsDatasetsValue() {
        let checks = Self.report.bars
        // github_events.json was not measured; collections neither, so their bar is not listed.
        #expect(checks.map(\.value) == [3, 2, nil, 0.8, 0.79, nil, 0.5, 0.6, 16])
        // A ratio on its bar meets it; memory growth on its bar does not.
        #expect(checks.map(\.met) == [true, false, nil, true, false, nil, false, true, false])
    }

    /// The collections' bar (another item's figure) is judged once a run gives its value: at
    /// most 16 bytes per position.
    @Test(arguments: [(16.0, true), (16.5, false)])
    func theCollectionsBarIsJudgedWhenMeasured(value: Double, met: Bool) throws {
        var report = Self.report
        report.collectionBytesPerPosition = value
        let check = try #require(report.bars.last)
        #expect(check.bar.metric == .collectionBytesPerPosition)
        #expect(check.value == value)
        #expect(check.met == met)
        let json = try JSONValue(parsing: report.json())
        #expect(json["collection_bytes_per_position"]?.numberValue.flatMap { Double($0.text) } == value)
    }

    @Test func aBarOnADatasetNotMeasuredIsNeitherMetNorFailed() {
        var report = Self.report
        report.results.removeLast()
        report.streaming = nil
        let checks = report.bars
        #expect(checks.filter { $0.bar.dataset == "seed-10MB" }.allSatisfy { $0.met != nil })
        let unmeasured = checks.filter { $0.bar.dataset != "seed-10MB" }
        #expect(unmeasured.count == 6)
        #expect(unmeasured.allSatisfy { $0.value == nil && $0.met == nil })
    }

    @Test func theJSONReportCarriesTheVerdictsAndTheNewRatios() throws {
        var report = Self.report
        report.results.removeLast()
        let json = try JSONValue(parsing: report.json())
        guard case .array(let bars)? = json["bars"] else {
            Issue.record("no bars array")
            return
        }
        #expect(bars.count == 9)
        let first = bars[0]
        #expect(first["metric"]?.stringValue == "ingest_vs_jsondecoder_tuned")
        #expect(first["dataset"]?.stringValue == "seed-10MB")
        #expect(first["comparison"]?.stringValue == ">=")
        #expect(first["bar"]?.numberValue?.text == "3")
        #expect(first["value"]?.numberValue?.text == "3")
        #expect(first["met"] == .bool(true))
        // twitter.json was not measured: no value, no verdict.
        #expect(bars[1]["value"] == .null)
        #expect(bars[1]["met"] == .null)
        // The streaming bar has no dataset.
        #expect(bars[8]["dataset"] == .null)
        #expect(bars[8]["met"] == .bool(false))
        // The bar's value is the dataset's own ratio, as the report prints it.
        let seed = try #require(json["datasets"]?["seed-10MB"])
        #expect(seed["ingest_vs_jsondecoder_tuned"] == first["value"])
        func value(_ key: String) -> Double? { seed[key]?.numberValue.flatMap { Double($0.text) } }
        // 10 MB in 0.120 s, 0.005 s and 0.080 s; the plain JSONDecoder's ratio stays.
        #expect(value("jsondecoder_tuned_mbps") == 83.333)
        #expect(value("yajl_raw_nocheck_mbps") == 2000)
        #expect(value("parse_vs_yajl_raw_nocheck") == 0.4)
        #expect(value("untyped_ingest_mbps") == 125)
        #expect(value("untyped_vs_typed") == 0.5)
        #expect(value("ingest_vs_jsondecoder") == 4)
        #expect(json["collection_bytes_per_position"] == .null)
    }

    @Test func theTableListsEveryBarWithItsVerdict() throws {
        let lines = Self.report.table().split(separator: "\n")
        let heading = try #require(lines.firstIndex(of: "Bars:"))
        let rows = lines[(heading + 1)...].map { $0.split(separator: " ").map(String.init) }
        #expect(rows.count == 9)
        #expect(rows[0] == ["ingest_vs_jsondecoder_tuned", ">=", "3.0", "seed-10MB", "3.000", "met"])
        #expect(rows[2] == ["ingest_vs_jsondecoder_tuned", ">=", "2.5", "github_events.json", "-", "not", "measured"])
        #expect(rows[4] == ["parse_vs_yajl_raw", ">=", "0.8", "twitter.json", "0.790", "NOT", "MET"])
        #expect(rows[8].suffix(3) == ["16.000", "NOT", "MET"])
    }

    /// A bars file (the hidden `--bars-file`) replaces the issue's bars; a malformed one is an
    /// error with its code, never a silent empty list.
    @Test func barsFilesAreReadAndCheckedForMistakes() throws {
        let dir = try Workspace()
        func write(_ text: String) throws -> String {
            let path = dir.url.appendingPathComponent("bars-\(UUID().uuidString).json").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let good = try write(
            #"[{"metric": "parse_vs_yajl_raw", "dataset": "seed-1MB", "comparison": ">=", "bar": 0.5},"#
                + #" {"metric": "streaming_peak_rss_mb_100mb_minus_1mb", "dataset": null, "comparison": "<", "bar": 8}]"#
        )
        #expect(
            try BenchBar.load(path: good) == [
                BenchBar(.parseVsYAJLRaw, .atLeast, 0.5, on: "seed-1MB"), BenchBar(.streamingGrowth, .below, 8),
            ])
        let cases: [(String, BenchBar.FileError.Code)] = [
            ("{", .notJSON), (#"{"metric": "x"}"#, .notAnArray),
            (#"[{"metric": "fast", "dataset": "a", "comparison": ">=", "bar": 1}]"#, .badBar),
            (#"[{"metric": "parse_vs_yajl_raw", "comparison": ">=", "bar": 1}]"#, .badBar),
            (#"[{"metric": "parse_vs_yajl_raw", "dataset": "a", "comparison": "=", "bar": 1}]"#, .badBar),
        ]
        for (text, code) in cases {
            let path = try write(text)
            let error = #expect(throws: BenchBar.FileError.self) { try BenchBar.load(path: path) }
            #expect(error?.code == code, "\(text)")
        }
        #expect(throws: BenchBar.FileError.self) { try BenchBar.load(path: dir.url.path + "/none.json") }
    }
}
