import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSync
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The contenders of `flatland bench-table`, each reading the whole table once per run.
struct TableBench {
    enum Contender: String, CaseIterable {
        case flatland, flatlandUntyped, urlsessionJSONDecoder, urlsessionBytes, replayFlatland, replayJSONDecoder

        var label: String {
            switch self {
            case .flatland: "Flatland Table<T>, into the store"
            case .flatlandUntyped: "Flatland UntypedTable, into the store"
            case .urlsessionJSONDecoder: "URLSession + JSONDecoder, into a dictionary"
            case .urlsessionBytes: "URLSession, bytes only (the floor)"
            case .replayFlatland: "Flatland Table<T>, the pages from memory"
            case .replayJSONDecoder: "JSONDecoder, the pages from memory"
            }
        }
    }

    /// What one read of the table gave.
    struct Read {
        var seconds: Double
        /// Rows held at the end (store or dictionary); nil for bytes only.
        var rows: Int?
        /// Of them, rows with `complete` true (read back from what was kept).
        var completeRows: Int?
        /// The path and query of each page requested, in order.
        var paths: [String]
        var bytes: Int
        /// The pages as the server answered them (bytes only), by path and query.
        var captured: [String: CapturedPage]?
    }

    let base: URL
    let version: TableProtocol
    let rows: Int
    let pages: Int

    var versionHeader: String { version == .v3 ? "3.0.0" : "2.0.0" }

    /// One warm-up run that checks every contender, then `runs` interleaved timed runs.
    func measure(runs: Int, seedSeconds: Double, pageSize: Int) async throws -> TableBenchReport {
        var times: [Contender: [Double]] = [:]
        var rowsRead: [Contender: Int] = [:]
        var pathsOfFlatland: [String] = []
        var captured: [String: CapturedPage] = [:]
        var bytes = 0
        for run in 0...runs {
            // The warm-up reads Flatland first (bytes only asks for the pages Flatland read), then
            // bytes only (the replays answer with the pages it captured).
            let order = run % 2 == 0 ? Contender.allCases : Contender.allCases.reversed()
            for contender in order {
                let read = try await self.read(contender, paths: pathsOfFlatland, captured: captured)
                if contender == .flatland { pathsOfFlatland = read.paths }
                if let pages = read.captured { captured = pages }
                if contender == .urlsessionBytes { bytes = read.bytes }
                if let n = read.rows { rowsRead[contender] = min(rowsRead[contender] ?? .max, n) }
                try check(contender, read, against: pathsOfFlatland)
                if run > 0 {
                    times[contender, default: []].append(read.seconds)
                }
            }
        }
        return TableBenchReport(
            rows: rows, pages: pages, pageSize: pageSize, version: version, runs: runs, bytes: bytes,
            seedSeconds: seedSeconds,
            seconds: times.mapValues(Bench.median), rowsRead: rowsRead,
            peakRSSMB: Self.status("VmHWM:"))
    }

    /// Every row read, every value decoded the same, over the same page requests.
    private func check(_ contender: Contender, _ read: Read, against flatlandPaths: [String]) throws {
        if let n = read.rows, n != rows {
            throw CLIFailure.invalid("\(contender.label) holds \(n) rows, not \(rows)")
        }
        if let complete = read.completeRows {
            let expected = (rows + 2) / 3
            guard complete == expected else {
                throw CLIFailure.invalid("\(contender.label) read \(complete) complete rows, not \(expected)")
            }
        }
        guard read.paths.count == pages else {
            throw CLIFailure.invalid("\(contender.label) read \(read.paths.count) pages, not \(pages)")
        }
        guard read.paths == flatlandPaths else {
            throw CLIFailure.invalid(
                "\(contender.label) requested other pages than Flatland: \(read.paths.prefix(3)) against "
                    + "\(flatlandPaths.prefix(3))")
        }
    }

    private func read(_ contender: Contender, paths: [String], captured: [String: CapturedPage]) async throws -> Read {
        let read: Read
        switch contender {
        case .flatland: read = try await flatland(typed: true, replaying: nil)
        case .flatlandUntyped: read = try await flatland(typed: false, replaying: nil)
        case .urlsessionJSONDecoder: read = try await urlSessionJSONDecoder()
        case .urlsessionBytes: read = try await urlSessionBytes(paths: paths)
        case .replayFlatland: read = try await flatland(typed: true, replaying: captured)
        case .replayJSONDecoder: read = try await replayJSONDecoder(captured)
        }
        return read
    }

    // MARK: Flatland

    /// A fresh in-memory session, every page of the table through `pages(_:)`; the time ends when
    /// the last page is in the store. With `replaying`, the session's transport answers from
    /// those pages instead of the server.
    private func flatland(typed: Bool, replaying pages: [String: CapturedPage]?) async throws -> Read {
        let environment = try Environment(name: "bench", baseURL: base)
        var configuration = Backend.Configuration()
        if let pages {
            let transport = ReplayTransport(pages: pages)
            configuration.makeTransport = { transport }
        }
        configuration.addTableHeaders(protocol: version)
        let types: [any Entity.Type] = typed ? [BenchTodo.self] : []
        let registry = try EntityRegistry(types)
        let session = Session(user: "bench", environment: environment, registry: registry, configuration: configuration)
        let options = TableOptions(protocol: version)
        var paths: [String] = []
        let start = monotonicSeconds()
        if typed {
            let table = try Table<BenchTodo>(TableBenchRows.table, session: session, options: options)
            for try await page in table.pages() { paths.append(page.path) }
        } else {
            let table = UntypedTable(TableBenchRows.table, session: session, prefix: BenchTodo.prefix, options: options)
            for try await page in table.pages() { paths.append(page.path) }
        }
        let seconds = monotonicSeconds() - start
        let store = session.store
        let ids = store.ids(prefix: BenchTodo.prefix)
        let complete: Int
        if typed {
            complete = ids.reduce(0) { $0 + (store.entity(EntityID<BenchTodo>($1))?.complete == true ? 1 : 0) }
        } else {
            complete = ids.reduce(0) { $0 + (store.record(id: $1)?.fields["complete"] == .bool(true) ? 1 : 0) }
        }
        await session.logout()
        return Read(seconds: seconds, rows: ids.count, completeRows: complete, paths: paths, bytes: 0)
    }

    // MARK: URLSession

    private func request(_ url: URL) -> URLRequest {
        var request = URLRequest(url: url)
        request.setValue(versionHeader, forHTTPHeaderField: "ZUMO-API-VERSION")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }

    private func get(_ session: URLSession, _ url: URL) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request(url))
        guard let http = response as? HTTPURLResponse, http.statusCode == 200 else {
            throw CLIFailure.invalid("GET \(url) answered \((response as? HTTPURLResponse)?.statusCode ?? 0)")
        }
        return (data, http)
    }

    /// What an SDK author writes today: each page fetched, decoded into Codable structs, kept
    /// by id, and the next page's URL taken from the `Link` header (v2) or `nextLink` (v3).
    private func urlSessionJSONDecoder() async throws -> Read {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        return try await jsonDecoder { url in
            let (data, response) = try await get(session, url)
            return (data, response.value(forHTTPHeaderField: "Link"))
        }
    }

    /// The same decoding over the pages captured from the server, from memory.
    private func replayJSONDecoder(_ pages: [String: CapturedPage]) async throws -> Read {
        try await jsonDecoder { url in
            guard let page = pages[Self.pathAndQuery(url)] else {
                throw CLIFailure.invalid("no captured page for \(Self.pathAndQuery(url))")
            }
            return (page.body, page.link)
        }
    }

    /// Every page from the first, each body and `Link` header from `fetch`, decoded and kept by id.
    private func jsonDecoder(_ fetch: (URL) async throws -> (body: Data, link: String?)) async throws -> Read {
        var paths: [String] = []
        let start = monotonicSeconds()
        let decoder = CodableTodo.decoder()
        var kept: [String: CodableTodo] = [:]
        var next: URL? = base.appendingPathComponent("tables/" + TableBenchRows.table)
        while let url = next {
            paths.append(Self.pathAndQuery(url))
            let (body, link) = try await fetch(url)
            next = try decodePage(body, link: link, decoder, into: &kept)
        }
        let seconds = monotonicSeconds() - start
        let complete = kept.values.reduce(0) { $0 + ($1.complete ? 1 : 0) }
        return Read(seconds: seconds, rows: kept.count, completeRows: complete, paths: paths, bytes: 0)
    }

    /// Decodes one page into `kept` and returns the next page's URL: from the `Link` header in
    /// v2, from `nextLink` in v3.
    private func decodePage(_ data: Data, link: String?, _ decoder: JSONDecoder, into kept: inout [String: CodableTodo])
        throws -> URL?
    {
        let items: [CodableTodo]
        let next: String?
        if version == .v3 {
            let page = try decoder.decode(CodableDatasyncPage.self, from: data)
            (items, next) = (page.items, page.nextLink)
        } else {
            (items, next) = (try decoder.decode([CodableTodo].self, from: data), Self.nextLink(link))
        }
        for item in items { kept[item.id] = item }
        return next.flatMap { URL(string: $0) }
    }

    /// The same requests as Flatland's (the paths it read), bytes only.
    private func urlSessionBytes(paths: [String]) async throws -> Read {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let urls = paths.map { URL(string: base.absoluteString + $0)! }
        var bytes = 0
        var pages: [(Data, String?)] = []
        let start = monotonicSeconds()
        for url in urls {
            let (data, response) = try await get(session, url)
            bytes += data.count
            pages.append((data, response.value(forHTTPHeaderField: "Link")))
        }
        let seconds = monotonicSeconds() - start
        var captured: [String: CapturedPage] = [:]
        for (path, page) in zip(paths, pages) { captured[path] = CapturedPage(body: page.0, link: page.1) }
        return Read(
            seconds: seconds, rows: nil, completeRows: nil, paths: urls.map(Self.pathAndQuery), bytes: bytes,
            captured: captured)
    }

    /// The URL of `<…>; rel=next` in a `Link` header.
    static func nextLink(_ header: String?) -> String? {
        guard let header else { return nil }
        for link in header.split(separator: ",") {
            let parts = link.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let target = parts.first, target.hasPrefix("<"), target.hasSuffix(">"),
                parts.dropFirst().contains(where: { $0.replacingOccurrences(of: "\"", with: "") == "rel=next" })
            else { continue }
            return String(target.dropFirst().dropLast())
        }
        return nil
    }

    /// A URL's path and query, as a ``TablePage`` gives them.
    static func pathAndQuery(_ url: URL) -> String {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.path }
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    // MARK: Memory

    /// A size from `/proc/self/status`, in MB.
    static func status(_ field: String) -> Double? {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
            let kilobytes = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return nil }
        return kilobytes / 1024
    }
}

/// The figures of one `flatland bench-table` run.
struct TableBenchReport {
    var rows: Int
    var pages: Int
    var pageSize: Int
    var version: TableProtocol
    var runs: Int
    var bytes: Int
    var seedSeconds: Double
    var seconds: [TableBench.Contender: Double]
    var rowsRead: [TableBench.Contender: Int]
    var peakRSSMB: Double?

    func rate(_ c: TableBench.Contender) -> Double? { seconds[c].map { Double(rows) / $0 } }

    func ratio(_ c: TableBench.Contender) -> Double? {
        guard let a = rate(c), let b = rate(.urlsessionJSONDecoder) else { return nil }
        return a / b
    }

    func replayRatio() -> Double? {
        guard let a = rate(.replayFlatland), let b = rate(.replayJSONDecoder) else { return nil }
        return a / b
    }

    func table() -> String {
        var lines = [
            "bench-table: \(rows) rows of \(TableBenchRows.table) (text, complete, priority, dueAt and system "
                + "properties), \(version), \(pages) pages of \(pageSize) over loopback, "
                + "\(formatted(Double(bytes) / 1e6, 1)) MB",
            "median of \(runs) interleaved runs, \(BenchReport.build) build; \(BenchReport.machine)",
        ]
        for c in TableBench.Contender.allCases {
            let rate = self.rate(c).map { String(Int($0.rounded())) } ?? "-"
            let time = seconds[c].map { formatted($0, 3) } ?? "-"
            lines.append(
                "  " + c.label.padding(toLength: 46, withPad: " ", startingAt: 0)
                    + "\(rate) rows/s (\(time) s)")
        }
        let ratio = self.ratio(.flatland).map { formatted($0, 2) + "x" } ?? "-"
        let untyped = self.ratio(.flatlandUntyped).map { formatted($0, 2) + "x" } ?? "-"
        lines.append("  Flatland / URLSession + JSONDecoder: \(ratio) (untyped \(untyped))")
        let replay = replayRatio().map { formatted($0, 2) + "x" } ?? "-"
        lines.append("  from memory, Flatland Table<T> / JSONDecoder: \(replay)")
        if let peak = peakRSSMB {
            lines.append("  peak RSS of the process (server and every contender): \(formatted(peak, 1)) MB")
        }
        return lines.joined(separator: "\n")
    }

    func json() -> String {
        func number(_ v: Double?) -> JSONValue {
            guard let v = v.flatMap(BenchReport.reported), let n = JSONNumber(v) else { return .null }
            return .number(n)
        }
        func count(_ v: Int?) -> JSONValue { v.map { .number(JSONNumber($0)) } ?? .null }
        let root: JSONObject = [
            "rows": count(rows),
            "pages": count(pages),
            "page_size": count(pageSize),
            "protocol": .string(version.rawValue),
            "runs": count(runs),
            "build": .string(BenchReport.build),
            "machine": .string(BenchReport.machine),
            "response_bytes": count(bytes),
            "seed_seconds": number(seedSeconds),
            "flatland_rows_per_s": number(rate(.flatland)),
            "flatland_untyped_rows_per_s": number(rate(.flatlandUntyped)),
            "urlsession_jsondecoder_rows_per_s": number(rate(.urlsessionJSONDecoder)),
            "urlsession_bytes_only_rows_per_s": number(rate(.urlsessionBytes)),
            "flatland_vs_urlsession": number(ratio(.flatland)),
            "flatland_untyped_vs_urlsession": number(ratio(.flatlandUntyped)),
            "replay_flatland_rows_per_s": number(rate(.replayFlatland)),
            "replay_jsondecoder_rows_per_s": number(rate(.replayJSONDecoder)),
            "replay_flatland_vs_jsondecoder": number(replayRatio()),
            "flatland_rows_read": count(rowsRead[.flatland]),
            "flatland_untyped_rows_read": count(rowsRead[.flatlandUntyped]),
            "urlsession_jsondecoder_rows_read": count(rowsRead[.urlsessionJSONDecoder]),
            "replay_flatland_rows_read": count(rowsRead[.replayFlatland]),
            "replay_jsondecoder_rows_read": count(rowsRead[.replayJSONDecoder]),
            "peak_rss_mb": number(peakRSSMB),
        ]
        return JSONValue.object(root).jsonString(pretty: true)
    }
}
