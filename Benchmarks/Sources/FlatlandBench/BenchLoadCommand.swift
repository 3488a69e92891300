import ArgumentParser
import FlatlandJSON
import FlatlandServer
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `flatland bench-load`: the table server under concurrent clients over loopback.
struct BenchLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-load",
        abstract: "Load the table server with concurrent reads and writes; report requests/s and latency p50/p99.",
        discussion: """
            A bounded client of --connections workers (URLSession, one connection per worker), each \
            sending one request after the other for --duration seconds against /tables/todoitem: \
            of every ten requests, six GET one row, two GET a page of 50 rows ($top/$skip), two \
            PATCH one row (no If-Match). Requests are spread round-robin over the --url instances. \
            Before the clock starts, --rows rows load-00000… are inserted (a 409 for a row already \
            there is fine). Without --url it starts the embedded server on loopback with --tables-db as its \
            storage; --instances N starts N of them on one shared database, which only \
            PostgreSQL gives (the SQLite table storage serves one instance per file: a second \
            one on the same file answers 500 or does not start). Reads and writes \
            get their own figures; a request answered other than 2xx counts as an error. Build in \
            release mode for figures: swift build -c release --product flatland.
            """
    )

    @Option(name: .customLong("url"), help: "A table server's base URL (repeat for several instances).")
    var urls: [String] = []

    @Option(help: "Concurrent client connections.")
    var connections = 8

    @Option(help: "Seconds of load.")
    var duration = 10.0

    @Option(help: "Rows seeded before the load.")
    var rows = 1000

    @Option(help: "Embedded server instances when no --url is given (more than one need --tables-db postgres://…).")
    var instances = 1

    @Option(help: "The embedded server's storage: a SQLite file or postgres://… (memory by default).")
    var tablesDb: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func validate() throws {
        guard connections > 0, connections <= 1024 else { throw ValidationError("--connections: 1 to 1024") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration: more than 0, at most 3600") }
        guard rows > 0, rows <= 1_000_000 else { throw ValidationError("--rows: 1 to 1000000") }
        guard instances >= 1, instances <= 8 else { throw ValidationError("--instances: 1 to 8") }
        guard urls.isEmpty || instances == 1 else { throw ValidationError("--instances applies without --url") }
        guard instances == 1 || tablesDb?.hasPrefix("postgres") == true else {
            throw ValidationError(
                "--instances \(instances): several instances need one shared database (--tables-db postgres://…); "
                    + "the SQLite table storage serves one instance per file")
        }
        for url in urls where URL(string: url)?.scheme?.hasPrefix("http") != true {
            throw ValidationError("--url \(url): not an http(s) URL")
        }
    }

    func run() async throws {
        var servers: [SampleServer] = []
        var bases = urls.compactMap { URL(string: $0) }
        var storage = urls.isEmpty ? "memory" : "external"
        if urls.isEmpty {
            let path = tablesDb
            if let path { storage = path.hasPrefix("postgres") ? "postgres" : "sqlite" }
            for _ in 0..<instances {
                let server = SampleServer(
                    configuration: .init(
                        population: .init(users: 0), limits: .init(maxConnections: 4096),
                        tables: TableServing(storage: path.map(TableServing.Storage.init), protocols: [.v2, .v3])))
                let port = try await server.start()
                servers.append(server)
                bases.append(URL(string: "http://127.0.0.1:\(port)")!)
            }
        }
        let result: LoadResult
        do {
            let load = LoadRun(bases: bases, connections: connections, rows: rows)
            try await load.seed()
            result = try await load.run(for: .milliseconds(Int64(duration * 1000)))
        } catch {
            for server in servers { await server.stop() }
            throw error
        }
        for server in servers { await server.stop() }
        report(result, instances: bases.count, storage: storage)
    }

    private func report(_ r: LoadResult, instances: Int, storage: String) {
        func number(_ value: Double) -> JSONValue { .number(JSONNumber((value * 1000).rounded() / 1000) ?? 0) }
        if json {
            printLine([
                "instances": .integer(instances), "storage": .string(storage), "connections": .integer(connections),
                "duration_s": number(r.seconds), "rows": .integer(rows),
                "read_requests": .integer(r.reads.count), "read_per_s": number(r.reads.perSecond(r.seconds)),
                "read_p50_ms": number(r.reads.percentile(0.50)), "read_p99_ms": number(r.reads.percentile(0.99)),
                "write_requests": .integer(r.writes.count), "write_per_s": number(r.writes.perSecond(r.seconds)),
                "write_p50_ms": number(r.writes.percentile(0.50)), "write_p99_ms": number(r.writes.percentile(0.99)),
                "errors": .integer(r.errors),
            ])
            return
        }
        print("\(instances) instance(s), storage \(storage), \(connections) connections, \(formatted(r.seconds, 1)) s")
        for (name, sample) in [("reads ", r.reads), ("writes", r.writes)] {
            print(
                "  \(name) \(sample.count) requests, \(formatted(sample.perSecond(r.seconds), 0)) req/s, "
                    + "p50 \(formatted(sample.percentile(0.5), 2)) ms, p99 \(formatted(sample.percentile(0.99), 2)) ms")
        }
        print("  errors \(r.errors)")
    }
}

/// Latencies of one kind of request, in milliseconds.
struct LatencySample: Sendable {
    var milliseconds: [Double] = []
    var count: Int { milliseconds.count }

    func perSecond(_ seconds: Double) -> Double { seconds > 0 ? Double(count) / seconds : 0 }

    /// The nearest-rank percentile (0 when empty).
    func percentile(_ p: Double) -> Double {
        guard !milliseconds.isEmpty else { return 0 }
        let sorted = milliseconds.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    static func + (a: LatencySample, b: LatencySample) -> LatencySample {
        LatencySample(milliseconds: a.milliseconds + b.milliseconds)
    }
}

/// What a load run measured.
struct LoadResult: Sendable {
    var reads = LatencySample()
    var writes = LatencySample()
    var errors = 0
    var seconds = 0.0
}

/// The bounded client: `connections` workers, requests spread over `bases`.
struct LoadRun: Sendable {
    let bases: [URL]
    let connections: Int
    let rows: Int

    static func id(_ n: Int) -> String { String(format: "load-%05d", n) }

    private func session() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = connections
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }

    private func request(_ base: URL, _ method: String, _ path: String, body: String? = nil) -> URLRequest {
        var request = URLRequest(url: URL(string: base.absoluteString + path)!)
        request.httpMethod = method
        request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        return request
    }

    /// Inserts the rows (a 409 for a row there already is fine), `connections` at a time.
    func seed() async throws {
        let session = session()
        defer { session.invalidateAndCancel() }
        for start in stride(from: 0, to: rows, by: connections) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in start..<min(start + connections, rows) {
                    let request = self.request(
                        bases[n % bases.count], "POST", "/tables/todoitem",
                        body: #"{"id":"\#(LoadRun.id(n))","text":"row \#(n)","complete":false}"#)
                    group.addTask {
                        let (_, response) = try await session.data(for: request)
                        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                        guard status == 201 || status == 409 else {
                            throw CLIFailure.invalid(
                                "seeding \(request.url?.absoluteString ?? ""): the server answered \(status)")
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// Loads the servers for `duration`.
    func run(for duration: Duration) async throws -> LoadResult {
        let session = session()
        defer { session.invalidateAndCancel() }
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = started + duration
        let result = await withTaskGroup(of: LoadResult.self) { group in
            for worker in 0..<connections {
                group.addTask { await work(worker, session: session, until: deadline) }
            }
            var total = LoadResult()
            for await part in group {
                total.reads = total.reads + part.reads
                total.writes = total.writes + part.writes
                total.errors += part.errors
            }
            return total
        }
        var measured = result
        let elapsed = clock.now - started
        measured.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return measured
    }

    private func work(_ worker: Int, session: URLSession, until deadline: ContinuousClock.Instant) async -> LoadResult {
        var result = LoadResult()
        var random = SystemRandomNumberGenerator()
        var n = worker
        let clock = ContinuousClock()
        while clock.now < deadline {
            n += 1
            let base = bases[n % bases.count]
            let row = Int.random(in: 0..<rows, using: &random)
            let slot = n % 10
            let request: URLRequest
            switch slot {
            case 0, 1:
                request = self.request(
                    base, "PATCH", "/tables/todoitem/\(LoadRun.id(row))", body: #"{"text":"edit \#(n)"}"#)
            case 2, 3:
                request = self.request(base, "GET", "/tables/todoitem?$top=50&$skip=\(max(0, row - 50))")
            default:
                request = self.request(base, "GET", "/tables/todoitem/\(LoadRun.id(row))")
            }
            let start = clock.now
            let status: Int
            do {
                let (_, response) = try await session.data(for: request)
                status = (response as? HTTPURLResponse)?.statusCode ?? 0
            } catch {
                status = 0
            }
            let elapsed = clock.now - start
            let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            guard (200..<300).contains(status) else {
                result.errors += 1
                continue
            }
            if slot < 2 { result.writes.milliseconds.append(ms) } else { result.reads.milliseconds.append(ms) }
        }
        return result
    }
}
