import ArgumentParser
import Flatland
import FlatlandFixtures
import FlatlandHTTP
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
            each figure is the median of the rounds. Build in release mode:
            swift run -c release flatland bench-http
            """
    )

    @Option(help: "Interleaved rounds (the median is reported).")
    var rounds = 7

    @Option(help: "Requests per contender per round for the overhead measurement.")
    var requests = 200

    @Option(help: "Approximate size of the paginated response for the throughput measurement, in MB.")
    var megabytes = 10

    func run() async throws {
        // About 508 bytes per user as the server writes them: enough users for the big page.
        let users = max(100, megabytes * 1_000_000 / 508)
        let server = SampleServer(configuration: .init(population: .init(users: users, sessions: 1)))
        let port = try await server.start()
        defer { Task { await server.stop() } }
        let base = "http://127.0.0.1:\(port)"
        let environment = try Environment(name: "bench", baseURL: URL(string: base)!)
        let raw = URLSession(configuration: .ephemeral)
        let flatland = Session(user: "bench", environment: environment, registry: seedFixtureRegistry())
        let path = "/users/\(server.state.userIDs[0])"

        // Warm up both: connections, caches, first allocations.
        for _ in 0..<20 {
            _ = try await raw.data(for: URLRequest(url: URL(string: base + path)!))
            _ = try await flatland.send(.get, path)
        }

        print("Request overhead per task: GET \(path) (one user, \(try await rawBytes(raw, base + path)) bytes)")
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
        print("  raw URLSession (bytes only)       \(formatted(rawMedian * 1e6, 1)) µs per request")
        print("  Flatland task (tracked, ingested) \(formatted(taskMedian * 1e6, 1)) µs per request")
        print(
            "  ratio \(formatted(taskMedian / rawMedian, 2))x, overhead \(formatted((taskMedian - rawMedian) * 1e6, 1)) µs "
                + "per task (median of \(rounds) interleaved rounds of \(requests))")

        let count = users
        let bigPath = "/users?offset=0&count=\(count)"
        let body = try await raw.data(for: URLRequest(url: URL(string: base + bigPath)!)).0
        let size = body.count
        print(
            "\nIngesting a paginated response over loopback: GET \(bigPath) "
                + "(\(formatted(Double(size) / 1e6, 1)) MB, \(count) users with device and friend ids)")
        var downloads: [Double] = []
        var ingests: [Double] = []
        var memory: [Double] = []
        var chunks = 0
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
                    let fresh = Session(user: "bench", environment: environment, registry: seedFixtureRegistry())
                    let start = monotonicSeconds()
                    let task = fresh.launch(.get, bigPath)
                    let result = try await task.value
                    ingests.append(monotonicSeconds() - start)
                    precondition(result.items.count == count)
                    chunks = task.chunksReceived
                    await fresh.logout()
                }
            }
        }
        let mb = Double(size) / 1e6
        print("  raw URLSession download           \(formatted(mb / Bench.median(downloads), 1)) MB/s")
        print("  the same bytes ingested in memory \(formatted(mb / Bench.median(memory), 1)) MB/s (no network)")
        print(
            "  Flatland task, streamed + ingested \(formatted(mb / Bench.median(ingests), 1)) MB/s "
                + "(\(chunks) chunks, applied as one batch)")
        await flatland.logout()
        raw.invalidateAndCancel()
        await server.stop()
    }

    private func rawBytes(_ session: URLSession, _ url: String) async throws -> Int {
        try await session.data(for: URLRequest(url: URL(string: url)!)).0.count
    }
}
