import ArgumentParser
import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `flatland bench-http`: what the HTTP layer costs, against a raw URLSession request to the
/// same sample server on loopback, in the same run.
struct BenchHTTPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-http",
        abstract: "Measure the HTTP layer on loopback: overhead per task against raw URLSession, and the "
            + "throughput of ingesting a large paginated response.",
        discussion: """
            Both contenders talk to the same in-process sample server; rounds are interleaved and
            each figure is the median of the rounds. The peak memory of a task is measured in a
            child process (the client alone, its store keeping nothing) for a 10 MB and a 100 MB
            response. Build in release mode:
            swift run -c release flatland bench-http [--json]
            """
    )

    @Option(help: "Interleaved rounds (the median is reported).")
    var rounds = 7

    @Option(help: "Requests per contender per round for the overhead measurement.")
    var requests = 200

    @Option(help: "Approximate size of the paginated response for the throughput measurement, in MB.")
    var megabytes = 10

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    @Option(help: BenchTransport.help)
    var transport: BenchTransport = .urlsession

    @Flag(help: "Skip the peak-memory measurement of the 10 MB and 100 MB responses.")
    var noMemory = false

    @Option(help: .hidden)
    var rssBase: String?

    @Option(help: .hidden)
    var rssPath: String?

    /// About 508 bytes per user as the server writes them.
    static func users(megabytes: Int) -> Int { max(100, megabytes * 1_000_000 / 508) }

    func run() async throws {
        if let rssBase, let rssPath {
            print(try await Self.peakRSSChild(base: rssBase, path: rssPath, transport: transport))
            return
        }
        var report = JSONObject()
        func say(_ line: String) {
            if json { FileHandleOutput.standardError.write(line + "\n") } else { print(line) }
        }
        try await measureThroughput(into: &report, say: say)
        if !noMemory {
            say("\nPeak memory of one task, client alone in a child process, store keeping nothing:")
            var peaks: [Double] = []
            for size in [10, 100] {
                let peak = try await Self.peakRSS(megabytes: size, transport: transport)
                peaks.append(peak)
                report["peak_rss_mb_\(size)mb"] = Self.number(peak)
                say("  \(size) MB response: peak RSS \(formatted(peak, 1)) MB")
            }
            say("  difference \(formatted(peaks[1] - peaks[0], 1)) MB (bar: < 16 MB)")
        }
        if json {
            report["machine"] = .string(BenchReport.machine)
            report["rounds"] = .number(JSONNumber(rounds))
            report["transport"] = .string(transport.rawValue)
            print(JSONValue.object(report).jsonString(pretty: true))
        }
    }

    static func number(_ value: Double) -> JSONValue {
        guard value.isFinite, let n = JSONNumber((value * 1000).rounded() / 1000) else { return .null }
        return .number(n)
    }

    /// One task's peak memory for a response of about `megabytes`, in a child process.
    static func peakRSS(megabytes: Int, transport: BenchTransport) async throws -> Double {
        let users = users(megabytes: megabytes)
        let server = SampleServer(configuration: .init(population: .init(users: users, sessions: 1)))
        let port = try await server.start()
        do {
            let arguments = [
                "bench-http", "--rss-base", "http://127.0.0.1:\(port)", "--rss-path", "/users?offset=0&count=\(users)",
                "--transport", transport.rawValue,
            ]
            // Waiting for the child blocks: not on Swift's cooperative pool, which the server uses.
            let peak = try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(with: Result { try StreamingMemory.runChild(arguments) })
                }
            }
            await server.stop()
            return peak
        } catch {
            await server.stop()
            throw error
        }
    }

    /// In the child: one task through a session whose store keeps nothing; the peak RSS in MB.
    static func peakRSSChild(base: String, path: String, transport: BenchTransport) async throws -> String {
        guard let url = URL(string: base) else { throw CLIFailure.invalid("bad --rss-base \(base)") }
        let environment = try Environment(name: "bench", baseURL: url)
        let session = Session(
            user: "bench", environment: environment, registry: seedFixtureRegistry(),
            hooks: StoreHooks(condition: { _ in false }),
            configuration: Backend.Configuration(makeTransport: transport.makeTransport))
        let task = session.launch(.get, path)
        _ = try await task.value
        guard task.bytesReceived > 0 else { throw CLIFailure.invalid("the response had no body") }
        await session.logout()
        return String(try StreamingMemory.peakRSSMegabytes())
    }

    private func measureThroughput(into report: inout JSONObject, say: (String) -> Void) async throws {
        let users = Self.users(megabytes: megabytes)
        let server = SampleServer(configuration: .init(population: .init(users: users, sessions: 1)))
        let port = try await server.start()
        defer { Task { await server.stop() } }
        let base = "http://127.0.0.1:\(port)"
        let environment = try Environment(name: "bench", baseURL: URL(string: base)!)
        let raw = URLSession(configuration: .ephemeral)
        let flatland = Session(
            user: "bench", environment: environment, registry: seedFixtureRegistry(),
            configuration: Backend.Configuration(makeTransport: transport.makeTransport))
        let path = "/users/\(server.state.userIDs[0])"

        // Warm up both: connections, caches, first allocations.
        for _ in 0..<20 {
            _ = try await raw.data(for: URLRequest(url: URL(string: base + path)!))
            _ = try await flatland.send(.get, path)
        }

        say("Request overhead per task: GET \(path) (one user, \(try await rawBytes(raw, base + path)) bytes)")
        var rawTimes: [Double] = []
        var taskTimes: [Double] = []
        for round in 0..<rounds {
            let order = round % 2 == 0 ? [true, false] : [false, true]
            for useRaw in order {
                let start = monotonicSeconds()
                for _ in 0..<requests {
                    if useRaw {
                        var request = URLRequest(url: URL(string: base + path)!)
                        request.setValue("application/json", forHTTPHeaderField: "Accept")
                        let (data, _) = try await raw.data(for: request)
                        precondition(!data.isEmpty)
                    } else {
                        _ = try await flatland.send(.get, path)
                    }
                }
                let perRequest = (monotonicSeconds() - start) / Double(requests)
                if useRaw { rawTimes.append(perRequest) } else { taskTimes.append(perRequest) }
            }
        }
        let rawMedian = Bench.median(rawTimes)
        let taskMedian = Bench.median(taskTimes)
        say("  raw URLSession (bytes only)       \(formatted(rawMedian * 1e6, 1)) µs per request")
        say("  Flatland task (tracked, ingested) \(formatted(taskMedian * 1e6, 1)) µs per request")
        say(
            "  ratio \(formatted(taskMedian / rawMedian, 2))x, overhead \(formatted((taskMedian - rawMedian) * 1e6, 1)) µs "
                + "per task (median of \(rounds) interleaved rounds of \(requests))")

        let count = users
        let bigPath = "/users?offset=0&count=\(count)"
        let body = try await raw.data(for: URLRequest(url: URL(string: base + bigPath)!)).0
        let size = body.count
        say(
            "\nIngesting a paginated response over loopback: GET \(bigPath) "
                + "(\(formatted(Double(size) / 1e6, 1)) MB, \(count) users with device and friend ids)")
        var downloads: [Double] = []
        var ingests: [Double] = []
        var memory: [Double] = []
        var chunks = 0
        var peakBuffered = 0
        for round in 0..<max(3, rounds / 2) {
            let order = round % 2 == 0 ? [true, false] : [false, true]
            for useRaw in order {
                if useRaw {
                    let start = monotonicSeconds()
                    _ = try await raw.data(for: URLRequest(url: URL(string: base + bigPath)!))
                    downloads.append(monotonicSeconds() - start)
                    let store = Store(registry: seedFixtureRegistry())
                    let begin = monotonicSeconds()
                    try store.ingest(body, endpoint: bigPath)
                    memory.append(monotonicSeconds() - begin)
                } else {
                    // A new session each round: every record is an insert, as on a first launch.
                    let fresh = Session(
                        user: "bench", environment: environment, registry: seedFixtureRegistry(),
                        configuration: Backend.Configuration(makeTransport: transport.makeTransport))
                    let start = monotonicSeconds()
                    let task = fresh.launch(.get, bigPath)
                    let result = try await task.value
                    ingests.append(monotonicSeconds() - start)
                    precondition(result.items.count == count)
                    chunks = task.chunksReceived
                    peakBuffered = max(peakBuffered, task.peakBytesBuffered)
                    await fresh.logout()
                }
            }
        }
        let mb = Double(size) / 1e6
        let download = mb / Bench.median(downloads)
        let inMemory = mb / Bench.median(memory)
        let streamed = mb / Bench.median(ingests)
        say("  raw URLSession download           \(formatted(download, 1)) MB/s")
        say("  the same bytes ingested in memory \(formatted(inMemory, 1)) MB/s (no network)")
        say(
            "  Flatland task, streamed + ingested \(formatted(streamed, 1)) MB/s "
                + "(\(chunks) chunks, ingested beside the download, applied as one batch; "
                + "at most \(formatted(Double(peakBuffered) / 1024, 0)) KiB waited for the ingest)")
        say("  task / download \(formatted(streamed / download, 2))x (bar: >= 0.85)")
        report["request_raw_us"] = Self.number(rawMedian * 1e6)
        report["request_task_us"] = Self.number(taskMedian * 1e6)
        report["request_overhead_us"] = Self.number((taskMedian - rawMedian) * 1e6)
        report["response_bytes"] = .number(JSONNumber(size))
        report["download_mbps"] = Self.number(download)
        report["in_memory_ingest_mbps"] = Self.number(inMemory)
        report["task_mbps"] = Self.number(streamed)
        report["task_vs_download"] = Self.number(streamed / download)
        report["chunks"] = .number(JSONNumber(chunks))
        report["peak_bytes_buffered"] = .number(JSONNumber(peakBuffered))
        await flatland.logout()
        raw.invalidateAndCancel()
        await server.stop()
    }

    private func rawBytes(_ session: URLSession, _ url: String) async throws -> Int {
        try await session.data(for: URLRequest(url: URL(string: url)!)).0.count
    }
}
