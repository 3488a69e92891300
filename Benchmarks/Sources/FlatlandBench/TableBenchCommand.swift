import ArgumentParser
import Flatland
import FlatlandJSON
import FlatlandServer
import FlatlandSync
import Foundation

/// `flatland bench-table`: rows per second of a large table query read page by page from the
/// embedded table server over loopback, by Flatland's tables into a session's store and by plain
/// URLSession + JSONDecoder into a dictionary, in the same run.
struct TableBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-table",
        abstract: "Measure a table query read page by page over loopback: Flatland's Table<T> into the store "
            + "against URLSession + JSONDecoder.",
        discussion: """
            The embedded server serves one todo table (text, complete, priority, dueAt and the \
            system properties) of --rows rows, seeded straight into its SQLite file. Every \
            contender reads the whole table with the same page requests, following the server's \
            next links (a Link header in v2, nextLink in v3):

            - Flatland Table<T>: typed rows through Table.pages(_:) into a fresh in-memory \
            session's store (and Flatland UntypedTable, rows kept as JSON objects);
            - URLSession + JSONDecoder: URLSession.data(for:), JSONDecoder into Codable structs \
            (dates ISO 8601 with fractional seconds), kept in a dictionary by id;
            - URLSession, bytes only: the same requests, nothing decoded: what the server and \
            loopback cost, a floor under every contender (it also captures the pages);
            - from memory: Flatland Table<T> through a transport that answers with the captured \
            pages, and JSONDecoder over the same bytes: the client's own work alone.

            Pages: in the table protocol $top is the number of rows a query wants in all, and the \
            server sends no next link for a query that gives one, so the page size is the \
            server's own: it is set to --page-size (default 1000, the largest $top the server \
            accepts, so that per-request costs weigh least; 100,000 rows are 100 pages).

            Each run is one read of the whole table by each contender, interleaved (A B C D, \
            D C B A, ...), after one untimed warm-up run that also checks that every contender \
            read every row, decoded the same values and asked for the same pages (exit 1 if \
            not); each figure is the median of --runs. The peak RSS is the whole process's \
            (VmHWM), server and every contender included. Build in release mode: \
            swift build -c release --product flatland, then .build/release/flatland bench-table
            """
    )

    @Option(help: "Rows in the table.")
    var rows = 100_000

    @Option(help: "Rows per page: the server's page size (see above).")
    var pageSize = 1000

    @Option(name: .customLong("protocol"), help: "The table protocol spoken: v2 or v3.")
    var protocolName = "v2"

    @Option(help: "Timed runs of each contender (the median is reported).")
    var runs = 5

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func validate() throws {
        guard rows >= 1 else { throw ValidationError("--rows must be 1 or more") }
        guard pageSize >= 1 else { throw ValidationError("--page-size must be 1 or more") }
        guard runs >= 1 else { throw ValidationError("--runs must be 1 or more") }
        guard ["v2", "v3"].contains(protocolName) else { throw ValidationError("--protocol must be v2 or v3") }
    }

    func run() async throws {
        let version: TableProtocol = protocolName == "v3" ? .v3 : .v2
        let log = FileHandleOutput.standardError
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flatland-bench-table-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let server = SampleServer(
            configuration: .init(
                population: .init(users: 1, sessions: 1),
                tables: TableServing(
                    tables: [TableDefinition(name: TableBenchRows.table)], databasePath: directory + "/tables.sqlite",
                    protocols: [.v2, .v3], pageSize: pageSize, maxTop: max(1000, pageSize))))
        let port = try await server.start()
        let bench = TableBench(
            base: URL(string: "http://127.0.0.1:\(port)")!, version: version, rows: rows,
            pages: (rows + pageSize - 1) / pageSize)
        do {
            log.write("seeding \(rows) rows...\n")
            let seedSeconds = try TableBenchRows.seed(path: directory + "/tables.sqlite", rows: rows)
            log.write("measuring \(bench.pages) pages of \(pageSize), \(version), 1 + \(runs) runs...\n")
            let report = try await bench.measure(runs: runs, seedSeconds: seedSeconds, pageSize: pageSize)
            print(json ? report.json() : report.table())
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
