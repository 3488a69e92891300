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
        case flatland, flatlandUntyped, urlsessionJSONDecoder, urlsessionBytes

        var label: String {
            switch self {
            case .flatland: "Flatland Table<T>, into the store"
            case .flatlandUntyped: "Flatland UntypedTable, into the store"
            case .urlsessionJSONDecoder: "URLSession + JSONDecoder, into a dictionary"
            case .urlsessionBytes: "URLSession, bytes only (the floor)"
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
        /// Growth of the process's resident peak during the read, in MB (nil where Linux's
        /// `/proc/self/clear_refs` cannot reset it).
        var peakGrowthMB: Double?
    }

    let base: URL
    let version: TableProtocol
    let rows: Int
    let pages: Int

    var versionHeader: String { version == .v3 ? "3.0.0" : "2.0.0" }

    /// One warm-up run that checks every contender, then `runs` interleaved timed runs.
    func measure(runs: Int, seedSeconds: Double, pageSize: Int) async throws -> TableBenchReport {
        var times: [Contender: [Double]] = [:]
        var growth: [Contender: [Double]] = [:]
        var rowsRead: [Contender: Int] = [:]
        var pathsOfFlatland: [String] = []
        var bytes = 0
        for run in 0...runs {
            // The warm-up reads Flatland first: bytes only replays the pages Flatland read.
            let order = run % 2 == 0 ? Contender.allCases : Contender.allCases.reversed()
            for contender in order {
                let read = try await self.read(contender, paths: pathsOfFlatland)
                if contender == .flatland { pathsOfFlatland = read.paths }
                if contender == .urlsessionBytes { bytes = read.bytes }
                if let n = read.rows { rowsRead[contender] = min(rowsRead[contender] ?? .max, n) }
                try check(contender, read, against: pathsOfFlatland)
                if run > 0 {
                    times[contender, default: []].append(read.seconds)
                    if let g = read.peakGrowthMB { growth[contender, default: []].append(g) }
                }
            }
        }
        return TableBenchReport(
            rows: rows, pages: pages, pageSize: pageSize, version: version, runs: runs, bytes: bytes,
            seedSeconds: seedSeconds,
            seconds: times.mapValues(Bench.median), peakGrowthMB: growth.mapValues(Bench.median), rowsRead: rowsRead,
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

    private func read(_ contender: Contender, paths: [String]) async throws -> Read {
        let rssBefore = Self.resetPeak()
        var read: Read
        switch contender {
        case .flatland: read = try await flatland(typed: true)
        case .flatlandUntyped: read = try await flatland(typed: false)
        case .urlsessionJSONDecoder: read = try await urlSessionJSONDecoder()
        case .urlsessionBytes: read = try await urlSessionBytes(paths: paths)
        }
        if let rssBefore, let peak = Self.status("VmHWM:") { read.peakGrowthMB = peak - rssBefore }
        return read
    }

    // MARK: Flatland

    /// A fresh in-memory session, every page of the table through `pages(_:)`; the time ends when
    /// the last page is in the store.
    private func flatland(typed: Bool) async throws -> Read {
        let environment = try Environment(name: "bench", baseURL: base)
        var configuration = Backend.Configuration()
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
        var paths: [String] = []
        let start = monotonicSeconds()
        let decoder = CodableTodo.decoder()
        var kept: [String: CodableTodo] = [:]
        var next: URL? = base.appendingPathComponent("tables/" + TableBenchRows.table)
        while let url = next {
            paths.append(Self.pathAndQuery(url))
            let (data, response) = try await get(session, url)
            let items: [CodableTodo]
            if version == .v3 {
                let page = try decoder.decode(CodableDatasyncPage.self, from: data)
                items = page.items
                next = page.nextLink.flatMap { URL(string: $0) }
            } else {
                items = try decoder.decode([CodableTodo].self, from: data)
                next = Self.nextLink(response.value(forHTTPHeaderField: "Link")).flatMap { URL(string: $0) }
            }
            for item in items { kept[item.id] = item }
        }
        let seconds = monotonicSeconds() - start
        let complete = kept.values.reduce(0) { $0 + ($1.complete ? 1 : 0) }
        return Read(seconds: seconds, rows: kept.count, completeRows: complete, paths: paths, bytes: 0)
    }

    /// The same requests as Flatland's (the paths it read), bytes only.
    private func urlSessionBytes(paths: [String]) async throws -> Read {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let urls = paths.map { URL(string: base.absoluteString + $0)! }
        var bytes = 0
        let start = monotonicSeconds()
        for url in urls { bytes += try await get(session, url).0.count }
        let seconds = monotonicSeconds() - start
        return Read(seconds: seconds, rows: nil, completeRows: nil, paths: urls.map(Self.pathAndQuery), bytes: bytes)
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

    /// Resets the process's resident peak to its current size (Linux `clear_refs`, 5) and
    /// returns that size in MB; nil where it cannot.
    static func resetPeak() -> Double? {
        guard (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil else {
            return nil
        }
        return status("VmRSS:")
    }

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
    var peakGrowthMB: [TableBench.Contender: Double]
    var rowsRead: [TableBench.Contender: Int]
    var peakRSSMB: Double?

    static var build: String {
        #if DEBUG
            "debug"
        #else
            "release"
        #endif
    }

    func rate(_ c: TableBench.Contender) -> Double? { seconds[c].map { Double(rows) / $0 } }

    func ratio(_ c: TableBench.Contender) -> Double? {
        guard let a = rate(c), let b = rate(.urlsessionJSONDecoder) else { return nil }
        return a / b
    }

    /// Rows per second of the time a contender took beyond the bytes-only floor: the client's
    /// own work (parse, decode, store), an estimate, as parts of it overlap with the transfer.
    func clientRate(_ c: TableBench.Contender) -> Double? {
        guard let t = seconds[c], let floor = seconds[.urlsessionBytes], t > floor else { return nil }
        return Double(rows) / (t - floor)
    }

    func clientRatio(_ c: TableBench.Contender) -> Double? {
        guard let a = clientRate(c), let b = clientRate(.urlsessionJSONDecoder) else { return nil }
        return a / b
    }

    func table() -> String {
        var lines = [
            "bench-table: \(rows) rows of \(TableBenchRows.table) (text, complete, priority, dueAt and system "
                + "properties), \(version), \(pages) pages of \(pageSize) over loopback, "
                + "\(formatted(Double(bytes) / 1e6, 1)) MB",
            "median of \(runs) interleaved runs, \(Self.build) build; \(BenchReport.machine)",
        ]
        for c in TableBench.Contender.allCases {
            let rate = self.rate(c).map { String(Int($0.rounded())) } ?? "-"
            let time = seconds[c].map { formatted($0, 3) } ?? "-"
            let memory = peakGrowthMB[c].map { ", peak RSS +\(formatted($0, 1)) MB" } ?? ""
            lines.append(
                "  " + c.label.padding(toLength: 46, withPad: " ", startingAt: 0)
                    + "\(rate) rows/s (\(time) s\(memory))")
        }
        let ratio = self.ratio(.flatland).map { formatted($0, 2) + "x" } ?? "-"
        let untyped = self.ratio(.flatlandUntyped).map { formatted($0, 2) + "x" } ?? "-"
        lines.append("  Flatland / URLSession + JSONDecoder: \(ratio) (untyped \(untyped))")
        let client = clientRatio(.flatland).map { formatted($0, 2) + "x" } ?? "-"
        let clientUntyped = clientRatio(.flatlandUntyped).map { formatted($0, 2) + "x" } ?? "-"
        lines.append(
            "  beyond the bytes-only floor (the client's own work, estimated): \(client) (untyped \(clientUntyped))")
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
            "build": .string(Self.build),
            "machine": .string(BenchReport.machine),
            "response_bytes": count(bytes),
            "seed_seconds": number(seedSeconds),
            "flatland_rows_per_s": number(rate(.flatland)),
            "flatland_untyped_rows_per_s": number(rate(.flatlandUntyped)),
            "urlsession_jsondecoder_rows_per_s": number(rate(.urlsessionJSONDecoder)),
            "urlsession_bytes_only_rows_per_s": number(rate(.urlsessionBytes)),
            "flatland_vs_urlsession": number(ratio(.flatland)),
            "flatland_untyped_vs_urlsession": number(ratio(.flatlandUntyped)),
            "flatland_client_rows_per_s": number(clientRate(.flatland)),
            "flatland_untyped_client_rows_per_s": number(clientRate(.flatlandUntyped)),
            "urlsession_jsondecoder_client_rows_per_s": number(clientRate(.urlsessionJSONDecoder)),
            "flatland_vs_urlsession_client": number(clientRatio(.flatland)),
            "flatland_rows_read": count(rowsRead[.flatland]),
            "flatland_untyped_rows_read": count(rowsRead[.flatlandUntyped]),
            "urlsession_jsondecoder_rows_read": count(rowsRead[.urlsessionJSONDecoder]),
            "flatland_peak_rss_growth_mb": number(peakGrowthMB[.flatland]),
            "flatland_untyped_peak_rss_growth_mb": number(peakGrowthMB[.flatlandUntyped]),
            "urlsession_jsondecoder_peak_rss_growth_mb": number(peakGrowthMB[.urlsessionJSONDecoder]),
            "urlsession_bytes_only_peak_rss_growth_mb": number(peakGrowthMB[.urlsessionBytes]),
            "peak_rss_mb": number(peakRSSMB),
        ]
        return JSONValue.object(root).jsonString(pretty: true)
    }
}
