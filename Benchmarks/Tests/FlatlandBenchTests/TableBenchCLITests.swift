import FlatlandJSON
import Foundation
import Testing

/// `flatland bench-table` on a small table: every contender read every row, over the pages the
/// page size makes, and the report's figures agree with each other.
@Suite("flatland bench-table")
struct TableBenchCLITests {
    @Test(arguments: [("v2", 300), ("v2", 250)])
    func everyContenderReadsEveryRow(protocolName: String, rows: Int) throws {
        let run = try CLI.run([
            "bench-table", "--rows", "\(rows)", "--page-size", "100", "--protocol", protocolName, "--runs", "1",
            "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONValue(parsing: run.stdout)
        func value(_ key: String) throws -> Double {
            let number = try #require(report[key]?.numberValue, "\(key)")
            return try #require(Double(number.text))
        }
        #expect(try value("rows") == Double(rows))
        #expect(try value("pages") == 3)
        #expect(report["protocol"]?.stringValue == protocolName)
        // What each contender held at the end: the store's rows, the dictionary's entries, over
        // the network and from the captured pages.
        for key in [
            "flatland_rows_read", "flatland_untyped_rows_read", "urlsession_jsondecoder_rows_read",
            "replay_flatland_rows_read", "replay_jsondecoder_rows_read",
        ] {
            #expect(try value(key) == Double(rows), "\(key)")
        }
        for key in [
            "flatland_rows_per_s", "flatland_untyped_rows_per_s", "urlsession_jsondecoder_rows_per_s",
            "urlsession_bytes_only_rows_per_s", "replay_flatland_rows_per_s", "replay_jsondecoder_rows_per_s",
            "response_bytes", "peak_rss_mb",
        ] {
            #expect(try value(key) > 0, "\(key)")
        }
        let ratio = try value("flatland_rows_per_s") / value("urlsession_jsondecoder_rows_per_s")
        #expect(abs(try value("flatland_vs_urlsession") - ratio) < 0.01 * max(1, ratio))
    }

    @Test func tableNamesEachContender() throws {
        let run = try CLI.run(["bench-table", "--rows", "120", "--page-size", "50", "--runs", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        for label in [
            "Flatland Table<T>", "Flatland UntypedTable", "URLSession + JSONDecoder", "bytes only",
            "Flatland Table<T>, the pages from memory", "JSONDecoder, the pages from memory",
        ] {
            #expect(run.stdout.contains(label), "\(label)")
        }
        #expect(run.stdout.contains("3 pages of 50"))
        #expect(run.stdout.contains("Flatland / URLSession + JSONDecoder: "))
    }

    @Test(arguments: [["--protocol", "v1"], ["--rows", "0"], ["--page-size", "0"], ["--runs", "0"]])
    func refusesBadOptions(options: [String]) throws {
        let run = try CLI.run(["bench-table"] + options)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }
}
