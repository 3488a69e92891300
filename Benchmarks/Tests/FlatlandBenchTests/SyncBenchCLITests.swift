import FlatlandJSON
import Foundation
import Testing

/// `flatland bench-sync`, small: every row of the server's table reaches the device's store
/// file, every queued insert reaches the server, and the report says so under its stable keys.
@Suite("flatland bench-sync")
struct SyncBenchCLITests {
    /// Each protocol on the default storage (SQLite), and v2 on PostgreSQL unless
    /// `FLATLAND_NO_POSTGRES=1` leaves it out.
    static let cases: [(version: String, storage: String)] =
        [("v2", "sqlite"), ("v3", "sqlite")]
        + (ProcessInfo.processInfo.environment["FLATLAND_NO_POSTGRES"] == "1" ? [] : [("v2", "postgres")])

    @Test(arguments: cases)
    func smallRunPullsEveryRowAndPushesEveryInsert(version: String, storage: String) throws {
        var arguments = [
            "bench-sync", "--rows", "300", "--pushes", "50", "--runs", "1", "--page-size", "40", "--protocol", version,
            "--json",
        ]
        if storage == "postgres" {
            let url = try #require(
                ProcessInfo.processInfo.environment["FLATLAND_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 },
                "FLATLAND_TEST_POSTGRES_URL is not set (scripts/postgres-test-cluster.sh start gives a database)")
            arguments += ["--tables-db", url]
        }
        let run = try CLI.run(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONValue(parsing: run.stdout)
        #expect(report["storage"] == .string(storage))
        func int(_ key: String) throws -> Int {
            let number = try #require(report[key]?.numberValue, "\(key)")
            return try number.integer()
        }
        func double(_ key: String) throws -> Double {
            let number = try #require(report[key]?.numberValue, "\(key)")
            return try number.double()
        }
        #expect(report["protocol"] == .string(version))
        #expect(try int("rows") == 300)
        #expect(try int("rows_small") == 30)
        #expect(try int("pushes") == 50)
        // Every row pulled into the store file, at both page sizes and from the small table.
        #expect(try int("pull_rows_stored") == 300)
        #expect(try int("pull_rows_stored_page_1000") == 300)
        #expect(try int("pull_rows_stored_small") == 30)
        // Pages of 40, then the request from the last key that brings none (a pull by key ends
        // only there); 300 rows fit in one page of 1000, and the empty one follows. (A v3 pull
        // pages as its server does, with next links: the page size is the server's.)
        if version == "v3" {
            #expect(try int("pull_pages") >= 1)
        } else {
            #expect(try int("pull_pages") == 9)
            #expect(try int("pull_pages_page_1000") == 2)
        }
        // Every insert pushed and on the server.
        #expect(try int("push_operations") == 50)
        for key in [
            "pull_rows_per_s", "pull_rows_per_s_page_1000", "pull_rows_per_s_small", "push_ops_per_s",
            "push_queue_inserts_per_s", "pull_seconds", "push_seconds", "push_batched_ops_per_s",
            "push_batched_seconds", "push_batch_vs_single", "pull_device_cpu_ms_per_page",
            "pull_server_cpu_ms_per_page", "pull_device_cpu_ms_per_page_1000", "pull_server_cpu_ms_per_page_1000",
        ] {
            #expect(try double(key) > 0, "\(key)")
        }
        for key in ["pull_peak_rss_growth_mb", "pull_peak_rss_growth_mb_page_1000", "pull_peak_rss_growth_mb_small"] {
            #expect(try double(key) >= 0, "\(key)")
        }
        // Two bars, judged on the reported pull rate and the batch push's ratio.
        guard case .array(let bars)? = report["bars"] else {
            Issue.record("no bars list")
            return
        }
        #expect(bars.count == 2)
        let bar = try #require(bars.first)
        #expect(bar["metric"] == .string("pull_rows_per_s"))
        #expect(bar["value"] == report["pull_rows_per_s"])
        #expect(bar["met"] == .bool(try double("pull_rows_per_s") >= 20_000))
        let batchBar = try #require(bars.last)
        #expect(batchBar["metric"] == .string("push_batch_vs_single"))
        #expect(batchBar["value"] == report["push_batch_vs_single"])
        #expect(batchBar["met"] == .bool(try double("push_batch_vs_single") >= 10))
    }

    @Test(arguments: [
        ["--page-size", "0"], ["--page-size", "1001"], ["--protocol", "v1"], ["--rows", "0"],
        ["--tables-db", "/tmp/tables.sqlite"], ["--tables-db", "postgres://me@127.0.0.1/db?schema=mine"],
    ])
    func badOptionsAreUsageErrors(arguments: [String]) throws {
        let run = try CLI.run(["bench-sync"] + arguments)
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
    }
}
