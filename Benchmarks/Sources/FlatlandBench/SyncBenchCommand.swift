import ArgumentParser
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation

/// `flatland bench-sync`: a first pull of a large table and a push of queued inserts by an
/// offline device against the embedded table server over loopback.
struct SyncBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-sync",
        abstract: "Measure offline sync over loopback: a fresh device's first pull of a large table (rows/s, peak "
            + "memory) and a push of queued local inserts (operations/s).",
        discussion: """
            The embedded server serves a table of --rows rows (text, complete, priority and the
            system properties), seeded through its storage a thousand rows per transaction, and
            one of a tenth of them. Its rows live in a SQLite file in a temporary directory, or
            with --tables-db postgres://… in PostgreSQL, in a schema of the run's own that is
            dropped at the end.

            First pull: a fresh device (a new SQLite store file in a temporary directory) pulls
            the whole table with a query id (incremental: ordered by updatedAt, re-paged on the
            delta token), --page-size rows a page (50, the official clients'), then again with
            1000 (the server's largest $top); each pull runs in a child process of its own, its
            time ending when the last page is committed, and the store file's rows are counted
            afterwards (they must be --rows). The peak memory growth is the child's peak resident
            set during the pull above its resident set before it; the pull of the small table
            gives the same figure for a tenth of the rows, so the two show whether a pull holds
            more than a page. After each pull the child sends the same requests again through
            URLSession, reading the bodies and dropping them: what the server and loopback cost
            alone, a floor under the pull (the rest is the device's parse, ingest and commits).
            CPU per page: the CPU time (user and system, every thread) the child spent during the
            pull, and the one this process (the server) spent from the child's start to the end
            of its pull, each divided by the pages (pull_device_cpu_ms_per_page,
            pull_server_cpu_ms_per_page): the two share this machine's cores, so a pull is faster
            only when one of them costs less.

            Push: a fresh device queues --pushes local inserts, then pushes them (one request per
            operation); the server must hold them all afterwards and the queue must be empty.
            Then another fresh device does the same into another table in batches of \(PushOptions.defaultBatchSize)
            (POST /tables/$batch): push_batched_ops_per_s, and push_batch_vs_single their ratio.

            Each figure is the median of --runs (the memory figures: the largest). The bars: a
            first pull at 20,000 rows/s or more; a batched push 10 times as fast as one by one. Build in release mode:
            swift run -c release flatland bench-sync
            """
    )

    @Option(help: "Rows in the server's table.")
    var rows = 100_000

    @Option(help: "Local inserts queued and pushed.")
    var pushes = 10_000

    @Option(help: "Rows per page of the pull.")
    var pageSize = 50

    @Option(name: .customLong("protocol"), help: "The table protocol spoken: v2 or v3.")
    var protocolName = "v2"

    @Option(help: "Runs of each measurement (the median is reported).")
    var runs = 3

    @Option(help: BenchTransport.help)
    var transport: BenchTransport = .urlsession

    @Option(help: ArgumentHelp(TablesDatabaseOption.help))
    var tablesDb: String?

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    @Option(help: .hidden)
    var childPull: String?

    @Option(help: .hidden)
    var childTable: String?

    func validate() throws {
        guard rows >= 1 else { throw ValidationError("--rows must be 1 or more") }
        guard pushes >= 1 else { throw ValidationError("--pushes must be 1 or more") }
        guard (1...1000).contains(pageSize) else { throw ValidationError("--page-size must be 1 to 1000") }
        guard runs >= 1 else { throw ValidationError("--runs must be 1 or more") }
        guard ["v2", "v3"].contains(protocolName) else { throw ValidationError("--protocol must be v2 or v3") }
        try TablesDatabaseOption.validate(tablesDb)
    }

    var version: TableProtocol { protocolName == "v3" ? .v3 : .v2 }

    func run() async throws {
        if let childPull, let url = URL(string: childPull) {
            let pull = try await SyncBench.pullChild(
                url: url, version: version, table: childTable ?? SyncBench.pullTable, pageSize: pageSize,
                transport: transport)
            print(pull.json)
            return
        }
        let log = FileHandleOutput.standardError
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flatland-bench-sync-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = TablesDatabaseOption.storage(
            tablesDb, schema: "flatland_bench_sync_\(ProcessInfo.processInfo.processIdentifier)", directory: directory)
        let small = max(1, rows / 10)
        let tables =
            [SyncBench.pullTable, SyncBench.smallTable] + (0..<runs).map(SyncBench.pushTable)
            + (0..<runs).map(SyncBench.batchedPushTable)
        let server = SampleServer(
            configuration: .init(
                population: .init(users: 1, sessions: 1),
                tables: TableServing(
                    // Pages of up to 1000 rows, so that the pull at pages of 1000 gets them (the
                    // server's own default page is the protocol's, 50 or 100, and a larger $top
                    // would get that and a next link); the pull at pages of 50 asks for 50.
                    tables: tables.map { TableDefinition(name: $0) }, storage: storage, protocols: [.v2, .v3],
                    pageSize: 1000, maxTop: 1000)))
        let port = try await server.start()
        do {
            let url = URL(string: "http://127.0.0.1:\(port)")!
            log.write("seeding \(rows) + \(small) rows...\n")
            let seedStart = monotonicSeconds()
            try await SyncBench.seed(server, table: SyncBench.pullTable, rows: rows)
            try await SyncBench.seed(server, table: SyncBench.smallTable, rows: small)
            var report = SyncBenchReport(
                rows: rows, smallRows: small, pushes: pushes, pageSize: pageSize, version: protocolName,
                storage: tablesDb == nil ? "sqlite" : "postgres", transport: transport.rawValue, runs: runs,
                seedSeconds: monotonicSeconds() - seedStart)
            let pulls: [(table: String, rows: Int, pageSize: Int)] = [
                (SyncBench.pullTable, rows, pageSize), (SyncBench.pullTable, rows, 1000),
                (SyncBench.smallTable, small, pageSize),
            ]
            for run in 0..<runs {
                // Interleaved, and reversed every other run, so drift weighs on every line alike.
                for (index, pull) in (run % 2 == 0 ? pulls : pulls.reversed()).enumerated() {
                    log.write("run \(run + 1)/\(runs): pull of \(pull.rows) rows, pages of \(pull.pageSize)...\n")
                    let result = try await SyncBench.pullInChild(
                        url: url, version: version, table: pull.table, pageSize: pull.pageSize,
                        transport: transport)
                    guard result.stored == pull.rows else {
                        throw CLIFailure.invalid(
                            "the store file holds \(result.stored) rows after a pull of \(pull.rows) (pages of "
                                + "\(pull.pageSize))")
                    }
                    report.add(result, line: run % 2 == 0 ? index : pulls.count - 1 - index)
                }
                log.write("run \(run + 1)/\(runs): push of \(pushes) queued inserts...\n")
                report.pushResults.append(
                    try await SyncBench.push(
                        url: url, version: version, table: SyncBench.pushTable(run), count: pushes,
                        server: server, directory: directory + "/push-\(run)", transport: transport))
                log.write("run \(run + 1)/\(runs): batched push of \(pushes) queued inserts...\n")
                report.batchedPushResults.append(
                    try await SyncBench.push(
                        url: url, version: version, table: SyncBench.batchedPushTable(run), count: pushes,
                        server: server, directory: directory + "/push-batch-\(run)", transport: transport,
                        options: PushOptions(batching: .automatic)))
            }
            print(json ? report.json() : report.table())
        } catch {
            try? await server.testControls.dropTablesSchema()
            await server.stop()
            throw error
        }
        try? await server.testControls.dropTablesSchema()
        await server.stop()
    }
}
