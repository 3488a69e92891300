import FlatlandJSON
import FlatlandSync

/// The results of one `flatland bench-sync` run, as a table or a JSON object.
struct SyncBenchReport {
    /// The bar of the offline benchmark: a first pull at this many rows per second or more.
    static let pullBar = 20_000.0

    var rows: Int
    var smallRows: Int
    var pushes: Int
    var pageSize: Int
    var version: String
    /// Where the server kept its rows: `sqlite` or `postgres`.
    var storage: String
    /// The device's HTTP transport: `urlsession` or `asynchttpclient`.
    var transport: String
    var runs: Int
    var seedSeconds: Double
    /// The pulls of each line: the table at `pageSize`, at 1000, and the small table at `pageSize`.
    var pullResults: [[SyncBench.Pull]] = [[], [], []]
    var pushResults: [SyncBench.Push] = []
    /// The pushes in batches (``PushOptions/Batching/automatic``, ``PushOptions/defaultBatchSize`` a
    /// batch).
    var batchedPushResults: [SyncBench.Push] = []
    /// The bar of batch push: this many times the operations per second of one by one.
    static let batchBar = 10.0

    mutating func add(_ pull: SyncBench.Pull, line: Int) { pullResults[line].append(pull) }

    /// Rows per second of a line's median pull: the table's rows (as stored), not the rows
    /// received, which count again the row each v2 page repeats from the one before.
    func rowsPerSecond(_ line: Int) -> Double {
        guard let rows = pullResults[line].first?.stored else { return .nan }
        return Double(rows) / Bench.median(pullResults[line].map(\.seconds))
    }

    /// Rows per second of the same requests through URLSession with nothing decoded (median).
    func floorRowsPerSecond(_ line: Int) -> Double {
        guard let rows = pullResults[line].first?.stored else { return .nan }
        return Double(rows) / Bench.median(pullResults[line].map(\.floorSeconds))
    }

    /// The median CPU milliseconds a page of a line's pulls cost the device (`\.deviceCPUSeconds`)
    /// or the server (`\.serverCPUSeconds`).
    func cpuMillisecondsPerPage(_ line: Int, _ cpu: KeyPath<SyncBench.Pull, Double>) -> Double {
        Bench.median(pullResults[line].map { $0[keyPath: cpu] * 1000 / Double(max($0.pages, 1)) })
    }

    /// The largest peak memory growth of a line's pulls, in MB.
    func peakGrowth(_ line: Int) -> Double { pullResults[line].map(\.peakGrowthMB).max() ?? .nan }

    var pushOpsPerSecond: Double { Double(pushes) / Bench.median(pushResults.map(\.seconds)) }
    var batchedPushOpsPerSecond: Double { Double(pushes) / Bench.median(batchedPushResults.map(\.seconds)) }
    var batchRatio: Double { batchedPushOpsPerSecond / pushOpsPerSecond }
    var batchBarMet: Bool { (BenchReport.reported(batchRatio) ?? 0) >= Self.batchBar }
    var queueInsertsPerSecond: Double { Double(pushes) / Bench.median(pushResults.map(\.queueSeconds)) }

    /// Whether the first pull at the default page size meets the bar, on the value as printed.
    var barMet: Bool { (BenchReport.reported(rowsPerSecond(0)) ?? 0) >= Self.pullBar }

    /// A rate to the unit, as the table prints it.
    private func whole(_ value: Double) -> String { value.isFinite ? String(Int(value.rounded())) : "-" }

    func table() -> String {
        func line(_ index: Int, _ label: String) -> String {
            let pulls = pullResults[index]
            return "  \(label): \(whole(rowsPerSecond(index))) rows/s "
                + "(\(formatted(Bench.median(pulls.map(\.seconds)), 2)) s, \(pulls.first?.pages ?? 0) pages), "
                + "peak memory growth \(formatted(peakGrowth(index), 1)) MB; the same requests, bytes only: "
                + "\(whole(floorRowsPerSecond(index))) rows/s; CPU per page: device "
                + "\(formatted(cpuMillisecondsPerPage(index, \.deviceCPUSeconds), 3)) ms, server "
                + "\(formatted(cpuMillisecondsPerPage(index, \.serverCPUSeconds), 3)) ms"
        }
        return """
            Offline sync over loopback, \(version), server on \(storage), device on \(transport), \(BenchReport.build) build, median of \(runs) runs \
            (server seeded in \(formatted(seedSeconds, 2)) s)
            First pull of \(rows) rows by a fresh device, every row in its store file:
            \(line(0, "pages of \(pageSize)"))
            \(line(1, "pages of 1000"))
            \(line(2, "\(smallRows) rows, pages of \(pageSize)"))
            Push of \(pushes) queued inserts, every one on the server, the queue empty:
              \(whole(pushOpsPerSecond)) operations/s (\(formatted(Bench.median(pushResults.map(\.seconds)), 2)) s; \
            queued locally at \(whole(queueInsertsPerSecond)) inserts/s)
            The same in batches of \(PushOptions.defaultBatchSize): \(whole(batchedPushOpsPerSecond)) operations/s \
            (\(formatted(Bench.median(batchedPushResults.map(\.seconds)), 2)) s), \(formatted(batchRatio, 3))x one by one

            Bars:
              pull_rows_per_s >= 20000    \(formatted(rowsPerSecond(0), 3))    \(barMet ? "met" : "NOT MET")
              push_batch_vs_single >= 10    \(formatted(batchRatio, 3))    \(batchBarMet ? "met" : "NOT MET")
            """
    }

    func json() -> String {
        func number(_ v: Double) -> JSONValue {
            guard let v = BenchReport.reported(v), let n = JSONNumber(v) else { return .null }
            return .number(n)
        }
        func int(_ v: Int) -> JSONValue { .number(JSONNumber(v)) }
        let root: JSONObject = [
            "build": .string(BenchReport.build),
            "protocol": .string(version),
            "storage": .string(storage),
            "transport": .string(transport),
            "rows": int(rows),
            "rows_small": int(smallRows),
            "pushes": int(pushes),
            "page_size": int(pageSize),
            "runs": int(runs),
            "seed_seconds": number(seedSeconds),
            "pull_rows_per_s": number(rowsPerSecond(0)),
            "pull_seconds": number(Bench.median(pullResults[0].map(\.seconds))),
            "pull_pages": int(pullResults[0].first?.pages ?? 0),
            "pull_rows_received": int(pullResults[0].first?.rows ?? 0),
            "pull_rows_stored": int(pullResults[0].first?.stored ?? 0),
            "pull_floor_rows_per_s": number(floorRowsPerSecond(0)),
            "pull_device_cpu_ms_per_page": number(cpuMillisecondsPerPage(0, \.deviceCPUSeconds)),
            "pull_server_cpu_ms_per_page": number(cpuMillisecondsPerPage(0, \.serverCPUSeconds)),
            "pull_rows_per_s_page_1000": number(rowsPerSecond(1)),
            "pull_device_cpu_ms_per_page_1000": number(cpuMillisecondsPerPage(1, \.deviceCPUSeconds)),
            "pull_server_cpu_ms_per_page_1000": number(cpuMillisecondsPerPage(1, \.serverCPUSeconds)),
            "pull_floor_rows_per_s_page_1000": number(floorRowsPerSecond(1)),
            "pull_pages_page_1000": int(pullResults[1].first?.pages ?? 0),
            "pull_rows_stored_page_1000": int(pullResults[1].first?.stored ?? 0),
            "pull_rows_per_s_small": number(rowsPerSecond(2)),
            "pull_rows_stored_small": int(pullResults[2].first?.stored ?? 0),
            "pull_peak_rss_growth_mb": number(peakGrowth(0)),
            "pull_peak_rss_growth_mb_page_1000": number(peakGrowth(1)),
            "pull_peak_rss_growth_mb_small": number(peakGrowth(2)),
            "push_ops_per_s": number(pushOpsPerSecond),
            "push_seconds": number(Bench.median(pushResults.map(\.seconds))),
            "push_operations": int(pushResults.first?.operations ?? 0),
            "push_queue_inserts_per_s": number(queueInsertsPerSecond),
            "push_batched_ops_per_s": number(batchedPushOpsPerSecond),
            "push_batched_seconds": number(Bench.median(batchedPushResults.map(\.seconds))),
            "push_batch_vs_single": number(batchRatio),
            "bars": .array([
                .object([
                    "metric": "pull_rows_per_s", "comparison": ">=", "bar": number(Self.pullBar),
                    "value": number(rowsPerSecond(0)), "met": .bool(barMet),
                ]),
                .object([
                    "metric": "push_batch_vs_single", "comparison": ">=", "bar": number(Self.batchBar),
                    "value": number(batchRatio), "met": .bool(batchBarMet),
                ]),
            ]),
        ]
        return JSONValue.object(root).jsonString(pretty: true)
    }
}
