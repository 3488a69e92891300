import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import GRDB
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The work of `flatland bench-sync`: the server's tables seeded in one transaction, a first
/// pull by a fresh device in a child process, and a push of queued inserts.
enum SyncBench {
    /// The table of `--rows` rows, and the one of a tenth of them (the memory check).
    static let pullTable = "benchpull"
    static let smallTable = "benchpullsmall"

    /// The table run `run`'s push writes into, empty before it.
    static func pushTable(_ run: Int) -> String { "benchpush\(run)" }
    /// The table run `run`'s batched push writes into, empty before it.
    static func batchedPushTable(_ run: Int) -> String { "benchpushbatch\(run)" }

    /// Fills `table` with `rows` rows through the server's storage (``SampleServer/seedTable(_:rows:id:data:)``).
    static func seed(_ server: SampleServer, table: String, rows: Int) async throws {
        try await server.testControls.seedTable(table, rows: rows, id: { "row-\($0)" }) { i in
            "{\"text\":\"Task number \(i) of the offline benchmark\",\"complete\":\(i % 3 == 0),"
                + "\"priority\":\(i % 5)}"
        }
    }

    /// The one integer `sql` reads from the SQLite file at `path`, opened read-only.
    private static func count(in path: String, sql: String, arguments: StatementArguments = []) throws -> Int {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in try Int.fetchOne(db, sql: sql, arguments: arguments) ?? 0 }
    }

    /// A fresh device: a persistent session in `directory` talking to `url`, and its sync
    /// context; `filters` run after the table headers are added.
    static func device(
        url: URL, version: TableProtocol, directory: String, transport: BenchTransport, filters: [any HTTPFilter] = []
    ) throws -> (Session, SyncContext) {
        let environment = try Environment(name: "bench", baseURL: url, allowInsecureHTTP: true)
        var configuration = Backend.Configuration(makeTransport: transport.makeTransport)
        configuration.addTableHeaders(protocol: version)
        configuration.filters += filters
        let session = try Session(
            user: "bench", environment: environment, registry: EntityRegistry([]),
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        return (session, try SyncContext(session: session, options: TableOptions(protocol: version)))
    }

    /// The rows of `table` in the closed store file of the device in `directory`.
    static func storeRows(directory: String, table: String) throws -> Int {
        let path = SQLitePersistence.sessionStorage(in: directory).location(user: "bench", environment: "bench").path
        let head = TableRowID.storeID(serverID: "", prefix: TableRowID.prefix(forTable: table))
        return try count(
            in: path, sql: "SELECT count(*) FROM entities WHERE substr(id, 1, ?) = ?",
            arguments: [head.utf8.count, head])
    }

    /// What one first pull gave, as the child process reports it.
    struct Pull: Sendable {
        var seconds: Double
        var rows: Int
        var pages: Int
        /// The rows in the store file afterwards.
        var stored: Int
        /// The peak resident memory during the pull above the resident memory before it, in MB.
        var peakGrowthMB: Double
        /// The seconds the same requests took through URLSession, the bytes read and dropped:
        /// what the server and loopback cost, a floor under the pull.
        var floorSeconds: Double
        /// The CPU seconds (user and system, every thread) the device spent during the pull.
        var deviceCPUSeconds: Double
        /// The CPU seconds the server's process spent during the pull (set by the parent).
        var serverCPUSeconds: Double = .nan

        var json: String {
            JSONValue.object([
                "seconds": .number(JSONNumber(seconds) ?? 0), "floor_seconds": .number(JSONNumber(floorSeconds) ?? 0),
                "rows": .number(JSONNumber(rows)),
                "pages": .number(JSONNumber(pages)), "stored": .number(JSONNumber(stored)),
                "peak_growth_mb": .number(JSONNumber(peakGrowthMB) ?? 0),
                "device_cpu_seconds": .number(JSONNumber(deviceCPUSeconds) ?? 0),
            ]).jsonString()
        }

        init(
            seconds: Double, rows: Int, pages: Int, stored: Int, peakGrowthMB: Double, floorSeconds: Double,
            deviceCPUSeconds: Double
        ) {
            self.seconds = seconds
            self.floorSeconds = floorSeconds
            self.deviceCPUSeconds = deviceCPUSeconds
            self.rows = rows
            self.pages = pages
            self.stored = stored
            self.peakGrowthMB = peakGrowthMB
        }

        init(json text: String) throws {
            let o = try? JSONValue(parsing: text)
            func double(_ key: String) -> Double? { o?[key]?.numberValue.flatMap { try? $0.double() } }
            func int(_ key: String) -> Int? { o?[key]?.numberValue.flatMap { try? $0.integer() } }
            guard let seconds = double("seconds"), let rows = int("rows"), let pages = int("pages"),
                let stored = int("stored"), let growth = double("peak_growth_mb"), let floor = double("floor_seconds"),
                let cpu = double("device_cpu_seconds")
            else { throw CLIFailure.invalid("the pull's child process printed \(text)") }
            self.init(
                seconds: seconds, rows: rows, pages: pages, stored: stored, peakGrowthMB: growth, floorSeconds: floor,
                deviceCPUSeconds: cpu)
        }
    }

    /// In the child: a fresh device pulls the whole of `table` with a query id, `pageSize` rows a
    /// page; the time ends when the last page is committed. The peak resident memory is reset
    /// (`/proc/self/clear_refs`) just before the pull, once the device is open. When the pull
    /// ends the child writes the line `pulled` to its standard output (the parent reads its own
    /// CPU time there). Then the same requests again, through URLSession with nothing decoded
    /// (the floor).
    static func pullChild(url: URL, version: TableProtocol, table: String, pageSize: Int, transport: BenchTransport)
        async throws -> Pull
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flatland-bench-sync-device-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let requested = Mutex<[URL]>([])
        let recorder = ClosureFilter { request, next in
            requested.withLock { $0.append(request.url) }
            return try await next(request)
        }
        let (session, sync) = try device(
            url: url, version: version, directory: directory, transport: transport, filters: [recorder])
        let offline = sync.table(table)
        Memory.resetPeak()
        let before = Memory.megabytes("VmRSS:")
        let cpuStart = CPUTime.seconds()
        let start = monotonicSeconds()
        let result = try await offline.pull(queryID: "bench", pageSize: pageSize)
        let seconds = monotonicSeconds() - start
        let cpu = CPUTime.seconds() - cpuStart
        FileHandle.standardOutput.write(Data("pulled\n".utf8))
        let growth = Memory.megabytes("VmHWM:") - before
        await session.close()
        let stored = try storeRows(directory: directory, table: table)
        let floor = try await bytesOnly(requested.withLock { $0 }, version: version)
        return Pull(
            seconds: seconds, rows: result.rows, pages: result.pages, stored: stored, peakGrowthMB: growth,
            floorSeconds: floor, deviceCPUSeconds: cpu)
    }

    /// The seconds `urls` take one after the other through URLSession, each body read whole and
    /// dropped.
    static func bytesOnly(_ urls: [URL], version: TableProtocol) async throws -> Double {
        let raw = URLSession(configuration: .ephemeral)
        defer { raw.invalidateAndCancel() }
        let start = monotonicSeconds()
        for url in urls {
            var request = URLRequest(url: url)
            request.setValue(version == .v3 ? "3.0.0" : "2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
            let (_, response) = try await raw.data(for: request)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                throw CLIFailure.invalid("the floor's GET \(url) was not answered 200")
            }
        }
        return monotonicSeconds() - start
    }

    /// Runs one first pull in a child process of this executable (so that its memory is the
    /// device's alone, not the server's or an earlier pull's). The server's CPU time is this
    /// process's from the child's start to its `pulled` line (the device's setup before the pull
    /// asks nothing of the server).
    ///
    /// The wait for the child blocks a thread for the whole pull, so it runs off Swift's
    /// cooperative pool: the server in this process runs its handlers on that pool, which has
    /// only as many threads as cores (two here), and would serve the pull with one.
    static func pullInChild(
        url: URL, version: TableProtocol, table: String, pageSize: Int, transport: BenchTransport
    ) async throws -> Pull {
        try await runBlocking {
            Result {
                try waitForPullInChild(
                    url: url, version: version, table: table, pageSize: pageSize, transport: transport)
            }
        }.get()
    }

    private static func waitForPullInChild(
        url: URL, version: TableProtocol, table: String, pageSize: Int, transport: BenchTransport
    ) throws -> Pull {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = [
            "bench-sync", "--child-pull", url.absoluteString, "--child-table", table, "--page-size", "\(pageSize)",
            "--protocol", version == .v3 ? "v3" : "v2", "--transport", transport.rawValue,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        let cpuStart = CPUTime.seconds()
        try process.run()
        let reader = pipe.fileHandleForReading
        var output = Data()
        var serverCPU = Double.nan
        while true {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            output.append(chunk)
            if serverCPU.isNaN, let line = output.firstIndex(of: UInt8(ascii: "\n")) {
                serverCPU = CPUTime.seconds() - cpuStart
                output.removeSubrange(...line)
            }
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIFailure.invalid("the pull's child process exited \(process.terminationStatus)")
        }
        var pull = try Pull(
            json: String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        pull.serverCPUSeconds = serverCPU
        return pull
    }

    /// What one push gave.
    struct Push {
        var seconds: Double
        /// The seconds the local inserts took to apply and queue (not part of the push).
        var queueSeconds: Double
        var operations: Int
    }

    /// A fresh device queues `count` local inserts into `table` and pushes them; checks that every
    /// one succeeded, the queue is empty and the server holds `count` rows of the table.
    static func push(
        url: URL, version: TableProtocol, table: String, count: Int, server: SampleServer, directory: String,
        transport: BenchTransport, options: PushOptions = PushOptions(batching: .never)
    ) async throws -> Push {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (session, sync) = try device(url: url, version: version, directory: directory, transport: transport)
        let offline = sync.table(table)
        let queueStart = monotonicSeconds()
        for i in 0..<count {
            try offline.insert([
                "id": .string("push-\(i)"), "text": .string("Queued offline, number \(i)"),
                "complete": .bool(i % 2 == 0), "priority": .number(JSONNumber(i % 5)),
            ])
        }
        let queueSeconds = monotonicSeconds() - queueStart
        let start = monotonicSeconds()
        let result = await sync.push(options: options)
        let seconds = monotonicSeconds() - start
        let left = try sync.operations().count
        await session.close()
        guard result.succeeded, result.outcomes.count == count else {
            throw CLIFailure.invalid(
                "the push of \(count) inserts: \(result.outcomes.count) sent, "
                    + (result.abortReason.map { "aborted: \($0)" } ?? "not every one succeeded"))
        }
        guard left == 0 else { throw CLIFailure.invalid("\(left) operations left in the queue after the push") }
        let held = try await server.testControls.rowCount(table)
        guard held == count else { throw CLIFailure.invalid("the server holds \(held) rows of \(table), not \(count)") }
        return Push(seconds: seconds, queueSeconds: queueSeconds, operations: count)
    }
}

/// This process's CPU time.
enum CPUTime {
    /// The user and system CPU seconds of every thread of this process so far.
    static func seconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return .nan }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// This process's resident memory, from `/proc/self/status` (Linux).
enum Memory {
    /// The value of a `/proc/self/status` line such as `VmRSS:` or `VmHWM:`, in MB (0 when absent).
    static func megabytes(_ key: String) -> Double {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }),
            let kilobytes = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1024
    }

    /// Resets the peak (`VmHWM`) to the current resident memory, as `/proc/self/clear_refs`
    /// allows since Linux 4.0; where it cannot, the peak stays the process's.
    static func resetPeak() {
        let file = open("/proc/self/clear_refs", O_WRONLY)
        guard file >= 0 else { return }
        _ = write(file, "5", 1)
        close(file)
    }
}
