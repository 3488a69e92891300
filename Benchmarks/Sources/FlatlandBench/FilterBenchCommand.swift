import ArgumentParser
import FlatlandServer
import FlatlandServerTesting
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `flatland-bench bench-filter`: the time per page of a filtered listing on a table whose
/// fields are declared (typed columns, the filtered ones indexed) against the same rows in a
/// free-form table (one JSON document per row), on SQLite or PostgreSQL.
struct FilterBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-filter",
        abstract: "Measure a filtered table listing, page by page: a declared table with indexed fields "
            + "against the same rows free-form.",
        discussion: """
            The embedded server (Datasync v3) serves two tables holding the same --rows rows \
            (text, complete, priority = i mod 10, code = i mod 1000): `todos_declared`, declared \
            with typed columns and an index on priority and on code, and `todos_free`, free-form \
            (the fields in the row's JSON). Each run lists both tables with two filters, following \
            nextLink to the end at the server's page size (--page-size):

            - broad: $filter=priority eq 3 (a tenth of the rows);
            - selective: $filter=code eq 123 (a thousandth of the rows).

            Each listing's pages are timed one by one (request sent to body read, over loopback, \
            bodies not decoded beyond their nextLink); the report gives, per table and filter, \
            the median over runs of the first page's time, of the median page's time and of the \
            whole listing. Runs are interleaved (declared, free, then free, declared), after one \
            untimed warm-up run that checks both tables give the same ids in the same order. \
            --tables-db postgres://… keeps the tables in PostgreSQL (a schema of the run's own, \
            dropped afterwards); SQLite in a temporary directory by default. Build in release mode.
            """
    )

    @Option(help: "Rows in each table.")
    var rows = 100_000

    @Option(help: "The server's page size (rows per page).")
    var pageSize = 100

    @Option(help: "Timed runs (the median is reported).")
    var runs = 5

    @Option(help: ArgumentHelp(TablesDatabaseOption.help))
    var tablesDb: String?

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func validate() throws {
        guard rows >= 1000 else { throw ValidationError("--rows must be 1000 or more") }
        guard (1...1000).contains(pageSize) else { throw ValidationError("--page-size must be 1 to 1000") }
        guard runs >= 1 else { throw ValidationError("--runs must be 1 or more") }
        try TablesDatabaseOption.validate(tablesDb)
    }

    static let declared = "todos_declared"
    static let free = "todos_free"
    static let filters: [(name: String, filter: String)] = [
        ("broad", "priority eq 3"), ("selective", "code eq 123"),
    ]

    func run() async throws {
        let log = FileHandleOutput.standardError
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flatland-bench-filter-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = TablesDatabaseOption.storage(
            tablesDb, schema: "flatland_bench_filter_\(ProcessInfo.processInfo.processIdentifier)", directory: directory
        )
        let schema = TableSchema(fields: [
            .init("text", .string), .init("complete", .bool), .init("priority", .int, indexed: true),
            .init("code", .int, indexed: true),
        ])
        let server = SampleServer(
            configuration: .init(
                population: .init(users: 1, sessions: 1),
                tables: TableServing(
                    tables: [TableDefinition(name: Self.declared, schema: schema), TableDefinition(name: Self.free)],
                    storage: storage, protocols: [.v3], pageSize: pageSize)))
        let port = try await server.start()
        do {
            let base = "http://127.0.0.1:\(port)/tables/"
            log.write("seeding \(rows) rows into each table...\n")
            let seedStart = monotonicSeconds()
            for table in [Self.declared, Self.free] {
                try await server.testControls.seedTable(table, rows: rows, id: { String(format: "row-%08d", $0) }) {
                    "{\"text\":\"Task number \($0)\",\"complete\":\($0 % 3 == 0),\"priority\":\($0 % 10),"
                        + "\"code\":\($0 % 1000)}"
                }
            }
            let seedSeconds = monotonicSeconds() - seedStart
            let session = URLSession(configuration: .ephemeral)
            defer { session.invalidateAndCancel() }
            // The warm-up: both tables list the same ids in the same order, every filter.
            for (name, filter) in Self.filters {
                let a = try await Self.list(session, base + Self.declared, filter: filter)
                let b = try await Self.list(session, base + Self.free, filter: filter)
                guard a.ids == b.ids, !a.ids.isEmpty else {
                    throw CLIFailure.invalid(
                        "the \(name) filter listed \(a.ids.count) rows of \(Self.declared) and \(b.ids.count) of "
                            + "\(Self.free), or not the same ids in the same order")
                }
            }
            var samples: [String: [Listing]] = [:]
            for run in 0..<runs {
                let order = run % 2 == 0 ? [Self.declared, Self.free] : [Self.free, Self.declared]
                for (name, filter) in Self.filters {
                    for table in order {
                        log.write("run \(run + 1)/\(runs): \(table), \(name)...\n")
                        samples["\(table) \(name)", default: []].append(
                            try await Self.list(session, base + table, filter: filter))
                    }
                }
            }
            let report = FilterBenchReport(
                rows: rows, pageSize: pageSize, storage: tablesDb == nil ? "sqlite" : "postgres", runs: runs,
                seedSeconds: seedSeconds, samples: samples)
            print(json ? report.json() : report.table())
        } catch {
            try? await server.testControls.dropTablesSchema()
            await server.stop()
            throw error
        }
        try? await server.testControls.dropTablesSchema()
        await server.stop()
    }

    /// One listing, timed page by page.
    struct Listing {
        var pageSeconds: [Double] = []
        var ids: [String] = []
    }

    /// Lists `table` with `filter` from its first page to its last, following `nextLink` (a
    /// query string, as Datasync writes it, or an absolute URL).
    static func list(_ session: URLSession, _ table: String, filter: String) async throws -> Listing {
        var components = URLComponents(string: table)!
        components.queryItems = [URLQueryItem(name: "$filter", value: filter)]
        var next: URL? = components.url
        var listing = Listing()
        while let url = next {
            var request = URLRequest(url: url)
            request.setValue("3.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
            let start = monotonicSeconds()
            let (data, response) = try await session.data(for: request)
            listing.pageSeconds.append(monotonicSeconds() - start)
            guard (response as? HTTPURLResponse)?.statusCode == 200,
                let page = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let items = page["items"] as? [[String: Any]]
            else {
                throw CLIFailure.invalid(
                    "GET \(url) answered \((response as? HTTPURLResponse)?.statusCode ?? 0): "
                        + String(decoding: data.prefix(300), as: UTF8.self))
            }
            listing.ids += items.compactMap { $0["id"] as? String }
            guard let link = page["nextLink"] as? String, !link.isEmpty else { break }
            next = link.hasPrefix("http") ? URL(string: link) : URL(string: table + "?" + link.drop { $0 == "?" })
            guard items.count > 0, listing.pageSeconds.count < 100_000 else {
                throw CLIFailure.invalid("\(table): a page with no row carried a nextLink, or the listing never ended")
            }
        }
        return listing
    }
}

/// The figures of one `flatland-bench bench-filter` run.
struct FilterBenchReport {
    var rows: Int
    var pageSize: Int
    var storage: String
    var runs: Int
    var seedSeconds: Double
    var samples: [String: [FilterBenchCommand.Listing]]

    struct Line {
        var table: String
        var filter: String
        var rows: Int
        var pages: Int
        var firstPageMs: Double
        var medianPageMs: Double
        var listingMs: Double
    }

    var lines: [Line] {
        var out: [Line] = []
        for (name, _) in FilterBenchCommand.filters {
            for table in [FilterBenchCommand.declared, FilterBenchCommand.free] {
                let runs = samples["\(table) \(name)"] ?? []
                guard let first = runs.first else { continue }
                out.append(
                    Line(
                        table: table, filter: name, rows: first.ids.count, pages: first.pageSeconds.count,
                        firstPageMs: median(runs.map { $0.pageSeconds[0] }) * 1000,
                        medianPageMs: median(runs.map { median($0.pageSeconds) }) * 1000,
                        listingMs: median(runs.map { $0.pageSeconds.reduce(0, +) }) * 1000))
            }
        }
        return out
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    func table() -> String {
        var text =
            "bench-filter: \(rows) rows per table on \(storage), pages of \(pageSize), Datasync v3, "
            + "median of \(runs) interleaved runs (seeded in \(formatted(seedSeconds, 1)) s)\n"
        text += "table           filter     rows   pages  first page ms  median page ms  listing ms\n"
        for line in lines {
            text +=
                line.table.padding(toLength: 16, withPad: " ", startingAt: 0)
                + line.filter.padding(toLength: 11, withPad: " ", startingAt: 0)
                + String(line.rows).leftPadded(6) + String(line.pages).leftPadded(8)
                + formatted(line.firstPageMs, 2).leftPadded(15) + formatted(line.medianPageMs, 2).leftPadded(16)
                + formatted(line.listingMs, 1).leftPadded(12) + "\n"
        }
        for (name, _) in FilterBenchCommand.filters {
            let pair = lines.filter { $0.filter == name }
            if pair.count == 2, pair[0].medianPageMs > 0 {
                text +=
                    "\(name): free-form / declared, median page \(formatted(pair[1].medianPageMs / pair[0].medianPageMs, 2))×, "
                    + "listing \(formatted(pair[1].listingMs / pair[0].listingMs, 2))×\n"
            }
        }
        return text
    }

    func json() -> String {
        let items = lines.map {
            "{\"table\":\"\($0.table)\",\"filter\":\"\($0.filter)\",\"rows\":\($0.rows),\"pages\":\($0.pages),"
                + "\"firstPageMs\":\(formatted($0.firstPageMs, 3)),\"medianPageMs\":\(formatted($0.medianPageMs, 3)),"
                + "\"listingMs\":\(formatted($0.listingMs, 2))}"
        }
        return "{\"benchmark\":\"bench-filter\",\"rows\":\(rows),\"pageSize\":\(pageSize),\"storage\":\"\(storage)\","
            + "\"runs\":\(runs),\"seedSeconds\":\(formatted(seedSeconds, 2)),\"lines\":[\(items.joined(separator: ","))]}"
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
