import FlatlandJSON
import Foundation
import Testing

/// `flatland-bench bench-filter`, small: both tables list the rows each filter selects, page by
/// page, and the report gives every line under its stable keys.
@Suite("flatland-bench bench-filter")
struct FilterBenchCLITests {
    /// SQLite, and PostgreSQL unless `FLATLAND_NO_POSTGRES=1` leaves it out.
    static let storages =
        ["sqlite"] + (ProcessInfo.processInfo.environment["FLATLAND_NO_POSTGRES"] == "1" ? [] : ["postgres"])

    @Test(arguments: storages)
    func bothTablesListWhatEachFilterSelects(storage: String) throws {
        var arguments = ["bench-filter", "--rows", "2000", "--page-size", "50", "--runs", "1", "--json"]
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
        guard case .array(let lines)? = report["lines"] else {
            Issue.record("no lines in \(run.stdout)")
            return
        }
        #expect(lines.count == 4)
        // 2000 rows: priority = i mod 10 selects 200 (4 pages of 50), code = i mod 1000 selects 2.
        let expected: [String: (rows: Int, pages: Int)] = ["broad": (200, 4), "selective": (2, 1)]
        var tables: Set<String> = []
        for line in lines {
            let filter = try #require(line["filter"]?.stringValue)
            tables.insert(try #require(line["table"]?.stringValue))
            let want = try #require(expected[filter])
            #expect(try line["rows"]?.numberValue?.integer() == want.rows, "\(filter)")
            #expect(try line["pages"]?.numberValue?.integer() == want.pages, "\(filter)")
            for key in ["firstPageMs", "medianPageMs", "listingMs"] {
                #expect(try (line[key]?.numberValue?.double() ?? 0) > 0, "\(filter) \(key)")
            }
        }
        #expect(tables == ["todos_declared", "todos_free"])
    }

    @Test(arguments: [
        ["--rows", "10"], ["--page-size", "0"], ["--runs", "0"], ["--tables-db", "/tmp/tables.sqlite"],
    ])
    func refusesBadOptions(options: [String]) throws {
        let run = try CLI.run(["bench-filter"] + options)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }
}
