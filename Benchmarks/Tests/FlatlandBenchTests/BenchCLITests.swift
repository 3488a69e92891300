import CAllocationCount
import FlatlandJSON
import Foundation
import Testing

/// `flatland bench` on the smallest generated dataset, one round: the JSON report carries every
/// field the comparison promises, consistent with each other, and the table its optional steps.
@Suite("flatland bench")
struct BenchCLITests {
    static let fields = [
        "yajl_raw_mbps", "parse_mbps", "ingest_mbps", "jsondecoder_mbps", "jsonserialization_mbps",
        "ingest_vs_jsondecoder", "ingest_vs_yajl_raw", "parse_vs_yajl_raw", "jsondecoder_tuned_mbps",
        "ingest_vs_jsondecoder_tuned", "yajl_raw_nocheck_mbps", "parse_vs_yajl_raw_nocheck", "untyped_ingest_mbps",
        "untyped_vs_typed",
    ]

    @Test func jsonReportHasEveryFieldForEachDataset() throws {
        let empty = try Workspace()
        let run = try CLI.run([
            "bench", "--seed-sizes", "1", "--rounds", "1", "--no-streaming", "--data", empty.url.path, "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONValue(parsing: run.stdout)
        let seed = try #require(report["datasets"]?["seed-1MB"])
        func value(_ key: String) throws -> Double {
            let number = try #require(seed[key]?.numberValue, "\(key)")
            return try #require(Double(number.text))
        }
        for field in Self.fields { #expect(try value(field) > 0, "\(field)") }
        // Counted where the allocation counter works (not under a sanitizer): every entity
        // needs at least its record, and JSONDecoder allocates more than the ingest.
        if flatland_allocation_count_available() != 0 {
            #expect(try value("mallocs_per_entity") >= 1)
            #expect(try value("jsondecoder_mallocs_per_entity") > value("mallocs_per_entity"))
            // The floor: a box and an id string (34 bytes) at least for every seed entity, and
            // no more than the ingest allocates.
            #expect(try value("mallocs_floor_per_entity") >= 2)
            #expect(try value("mallocs_floor_per_entity") <= value("mallocs_per_entity"))
        } else {
            #expect(seed["mallocs_per_entity"] == .null)
            #expect(seed["mallocs_floor_per_entity"] == .null)
        }
        // The ratios are the throughputs divided (to the report's three decimals).
        #expect(abs(try value("ingest_vs_jsondecoder") - value("ingest_mbps") / value("jsondecoder_mbps")) < 0.01)
        #expect(abs(try value("parse_vs_yajl_raw") - value("parse_mbps") / value("yajl_raw_mbps")) < 0.01)
        #expect(
            abs(try value("ingest_vs_jsondecoder_tuned") - value("ingest_mbps") / value("jsondecoder_tuned_mbps"))
                < 0.01)
        #expect(
            abs(try value("parse_vs_yajl_raw_nocheck") - value("parse_mbps") / value("yajl_raw_nocheck_mbps")) < 0.01)
        #expect(abs(try value("untyped_vs_typed") - value("untyped_ingest_mbps") / value("ingest_mbps")) < 0.01)
        #expect(try value("entities") > 3000)
        let steps = try #require(seed["ingest_phases_ms"])
        for step in ["read", "apply", "free"] { #expect(steps[step]?.numberValue != nil, "\(step)") }
        // The bars are on seed-10MB, twitter.json, github_events.json and the streaming run, none
        // of them measured here: listed, with no value and no verdict. The collections' bytes per
        // position are measured on the largest seed dataset (glibc's count of bytes in use): at
        // least a 4-byte slot per position, and far less than a string per position.
        guard case .array(let bars)? = report["bars"] else {
            Issue.record("no bars list")
            return
        }
        let collections = bars.filter { $0["metric"]?.stringValue == "collection_bytes_per_position" }
        let others = bars.filter { $0["metric"]?.stringValue != "collection_bytes_per_position" }
        #expect(others.count == 9)
        #expect(others.allSatisfy { $0["value"] == .null && $0["met"] == .null && $0["bar"]?.numberValue != nil })
        if flatland_heap_bytes_in_use() >= 0 {
            let perPosition = try #require(
                report["collection_bytes_per_position"]?.numberValue.flatMap { Double($0.text) })
            #expect(perPosition >= 4 && perPosition < 64)
            #expect(collections.count == 1 && collections.first?["met"]?.boolValue != nil)
        } else {
            #expect(report["collection_bytes_per_position"] == .null && collections.isEmpty)
        }
        // The real documents are not in an empty directory: it says so and goes on.
        guard case .array(let missing)? = report["missing"] else {
            Issue.record("no missing list")
            return
        }
        #expect(missing.compactMap(\.stringValue) == ["twitter.json", "github_events.json", "canada.json"])
    }

    @Test func phasesTableFollowsTheComparison() throws {
        let empty = try Workspace()
        let run = try CLI.run([
            "bench", "--seed-sizes", "1", "--rounds", "1", "--no-streaming", "--data", empty.url.path,
            "--only", "ingest", "--phases",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        let heading = try #require(lines.firstIndex { $0.hasPrefix("Ingest steps") })
        #expect(lines[heading + 1].split(separator: " ") == ["dataset", "read", "apply", "free"])
        #expect(lines[heading + 2].hasPrefix("seed-1MB"))
    }

    /// `--check` exits 1 when a bar is not met and 0 when every bar is, printing each bar with
    /// its figure; the bars come from a hidden file here, as the real ones need the real data.
    @Test(arguments: [(0.01, Int32(0), "met"), (1000, Int32(1), "NOT MET")])
    func checkExitsByTheBars(limit: Double, status: Int32, verdict: String) throws {
        let dir = try Workspace()
        try dir.write(
            "bars.json",
            #"[{"metric": "parse_vs_yajl_raw", "dataset": "seed-1MB", "comparison": ">=", "bar": \#(limit)}]"#)
        let run = try CLI.run([
            "bench", "--seed-sizes", "1", "--rounds", "1", "--no-streaming", "--data", dir.url.path,
            "--only", "yajl", "--only", "parse", "--check", "--bars-file",
            dir.url.appendingPathComponent("bars.json").path,
        ])
        #expect(run.status == status, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        let heading = try #require(lines.firstIndex(of: "Bars:"))
        #expect(lines.count == heading + 2)
        let row = lines[heading + 1]
        #expect(row.hasPrefix("  parse_vs_yajl_raw >= "))
        #expect(row.contains("seed-1MB"))
        #expect(row.hasSuffix(" " + verdict))
        if status == 0 {
            #expect(run.stderr.contains("check: all 1 bars met"))
        } else {
            #expect(run.stderr.contains("check: 1 of 1 bars not met"))
        }
    }

    /// A bar that the run could not measure fails the check too: `--check` never passes on data
    /// it did not see. With `--json`, the report stays one JSON object and the bars go to stderr.
    @Test func checkFailsOnABarNotMeasured() throws {
        let dir = try Workspace()
        try dir.write(
            "bars.json",
            #"[{"metric": "untyped_vs_typed", "dataset": "twitter.json", "comparison": ">=", "bar": 0.01}]"#)
        let run = try CLI.run([
            "bench", "--seed-sizes", "1", "--rounds", "1", "--no-streaming", "--data", dir.url.path,
            "--only", "parse", "--json", "--check", "--bars-file", dir.url.appendingPathComponent("bars.json").path,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try JSONValue(parsing: run.stdout)
        #expect(report["bars"]?[0]?["met"] == .null)
        #expect(run.stderr.contains("untyped_vs_typed >= 0.6") == false)
        #expect(run.stderr.contains("not measured"))
    }

    @Test func checkRejectsAMalformedBarsFile() throws {
        let dir = try Workspace()
        try dir.write("bars.json", "[{}]")
        let run = try CLI.run([
            "bench", "--seed-sizes", "1", "--rounds", "1", "--no-streaming", "--data", dir.url.path, "--check",
            "--bars-file", dir.url.appendingPathComponent("bars.json").path,
        ])
        #expect(run.status == 2)
        #expect(run.stderr.contains("badBar"))
        #expect(run.stdout.isEmpty)
    }
}
