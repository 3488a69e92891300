import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension SplitMix64 {
    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }
}

/// A count that a `@Sendable` closure can raise.
final class Counter: Sendable {
    private let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
    func add(_ n: Int = 1) { value.withLock { $0 += n } }
}

/// The requests a device sent and the statuses they got (nil: no answer), in order. Its filter
/// also asks for a fresh connection per request, so a lost response is seen at once as a
/// closed connection (on a reused one it shows only when the wait times out).
final class WireLog: Sendable {
    struct Entry: Sendable, CustomStringConvertible {
        var method: HTTPMethod
        var path: String
        var ifMatch: String?
        var key: String?
        var status: Int?
        /// The row a write is for: its path's id, or a POST body's `id`.
        var rowID: String?
        /// The `text` a write sent (nil for a delete).
        var text: String?

        var description: String {
            "\(method) \(path) if-match \(ifMatch ?? "-") key \(key?.prefix(8) ?? "-") text \(text ?? "-") → \(status.map(String.init) ?? "no answer")"
        }
    }

    private let entries = Mutex<[Entry]>([])
    /// Whether every request asks for a connection of its own (`Connection: close`).
    let freshConnections: Bool

    init(freshConnections: Bool = true) {
        self.freshConnections = freshConnections
    }

    /// Takes the entries logged so far.
    func drain() -> [Entry] {
        entries.withLock { taken in
            defer { taken = [] }
            return taken
        }
    }

    private static func entry(_ request: HTTPRequest, status: Int?) -> Entry {
        var rowID: String?
        var text: String?
        let parts = request.url.path.split(separator: "/")
        if parts.count == 3 { rowID = String(parts[2]) }
        if let body = request.body, case .object(let row)? = try? JSONValue(parsing: body) {
            if rowID == nil { rowID = row.text("id") }
            text = row.text("text")
        }
        return Entry(
            method: request.method, path: request.url.path, ifMatch: request.headers["If-Match"],
            key: request.headers["Idempotency-Key"], status: status, rowID: rowID, text: text)
    }

    var filter: ClosureFilter {
        ClosureFilter { request, next in
            var request = request
            if self.freshConnections { request.headers["Connection"] = "close" }
            if Simulation.tracing { print("sim wire: sends \(Self.entry(request, status: nil))") }
            do {
                let response = try await next(request)
                self.entries.withLock { $0.append(Self.entry(request, status: response.status)) }
                return response
            } catch {
                self.entries.withLock { $0.append(Self.entry(request, status: nil)) }
                throw error
            }
        }
    }
}

/// Strips `Idempotency-Key` on its way out: the server then never sees a key, as an Azure
/// server never uses one.
let withoutIdempotencyKeys = ClosureFilter { request, next in
    var request = request
    request.headers["Idempotency-Key"] = nil
    return try await next(request)
}

/// One simulated device: its own SQLite store, the shared user, the `todoitem` table. It can
/// be killed and started again on its files (``reopen()``), as an app's process is.
final class SimDevice: Sendable {
    /// What a start of the device opens: its session on the files, its context and table.
    private struct Parts: Sendable {
        var session: Session
        var sync: SyncContext
        var table: OfflineTable
    }

    let number: Int
    let wire: WireLog
    let directory: String
    private let port: Int
    private let retry: RetryPolicy
    private let keys: Bool
    private let serverIDs: Bool
    private let parts: Mutex<Parts>

    var session: Session { parts.withLock { $0.session } }
    var sync: SyncContext { parts.withLock { $0.sync } }
    var table: OfflineTable { parts.withLock { $0.table } }

    /// - Parameters:
    ///   - keys: whether the server sees `Idempotency-Key` (stripped after the wire log otherwise,
    ///     as every Azure server ignores it).
    ///   - freshConnections: a connection per request, or kept alive.
    init(
        number: Int, port: Int, retry: RetryPolicy = .none, keys: Bool = true, freshConnections: Bool = true,
        serverIDs: Bool = false
    ) throws {
        self.number = number
        self.port = port
        self.retry = retry
        self.keys = keys
        self.serverIDs = serverIDs
        wire = WireLog(freshConnections: freshConnections)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-sim-\(UUID())").path
        parts = Mutex(
            try SimDevice.open(
                directory: directory, port: port, retry: retry, keys: keys, wire: wire, serverIDs: serverIDs))
    }

    /// Opens the device's session on its files.
    private static func open(
        directory: String, port: Int, retry: RetryPolicy, keys: Bool, wire: WireLog, serverIDs: Bool
    ) throws -> Parts {
        let environment = try Environment(
            name: "sim", baseURL: URL(string: "http://127.0.0.1:\(port)")!, allowInsecureHTTP: true)
        var configuration = Backend.Configuration()
        configuration.addTableHeaders(protocol: .v2)
        // (The wire log's filter asks for fresh connections: a lost response is noticed at
        // once; the timeout is for a server that stops answering.)
        configuration.filters.append(wire.filter)
        if !keys { configuration.filters.append(withoutIdempotencyKeys) }
        configuration.timeout = 60
        configuration.retryPolicy = retry
        let session = try Session(
            user: "sim", environment: environment, registry: try EntityRegistry([TodoItem.self]),
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        let sync = try SyncContext(session: session, options: TableOptions(protocol: .v2))
        return Parts(session: session, sync: sync, table: sync.table("todoitem", serverAssignsIDs: serverIDs))
    }

    /// The device's process dies and starts again: its session (store, backend) is closed and
    /// opened anew on the same SQLite files; whatever it had committed is what it resumes from.
    func reopen() async throws {
        await session.close()
        let fresh = try SimDevice.open(
            directory: directory, port: port, retry: retry, keys: keys, wire: wire, serverIDs: serverIDs)
        parts.withLock { $0 = fresh }
    }

    /// The local rows: id → (text, version).
    func rows() -> [String: SimRow] {
        var rows: [String: SimRow] = [:]
        for row in table.rows() {
            guard let id = row.text("id") else { continue }
            rows[id] = SimRow(text: row.text("text"), version: row.text("version"))
        }
        return rows
    }

    func close() async {
        await session.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A row as the simulation compares it.
struct SimRow: Hashable, CustomStringConvertible {
    var text: String?
    var version: String?
    var description: String { "\(text ?? "nil")@\(version ?? "nil")" }
}

/// What one seed did, counted.
struct SimulationReport: Hashable {
    var seeds = 0
    var localWrites = 0
    var pushes = 0
    var pulls = 0
    var operationsSent = 0
    var conflicts = 0
    /// Faults a request actually took, by kind.
    var lostResponses = 0
    var serverErrors = 0
    var unavailable = 0
    var dropsMidPage = 0
    /// Inserts held uncertain and settled by a lookup.
    var uncertain = 0
    /// Devices killed mid-push or mid-pull (their task cancelled at a random moment) and started
    /// again on their files.
    var kills = 0
    /// Local writes made while a pull was out, and rows another client updated while a device
    /// was paging.
    var editsDuringPulls = 0
    var updatesDuringPaging = 0
    var faults: Int { lostResponses + serverErrors + unavailable + dropsMidPage }

    static func += (a: inout SimulationReport, b: SimulationReport) {
        a.seeds += b.seeds
        a.localWrites += b.localWrites
        a.pushes += b.pushes
        a.pulls += b.pulls
        a.operationsSent += b.operationsSent
        a.conflicts += b.conflicts
        a.lostResponses += b.lostResponses
        a.serverErrors += b.serverErrors
        a.unavailable += b.unavailable
        a.dropsMidPage += b.dropsMidPage
        a.uncertain += b.uncertain
        a.kills += b.kills
        a.editsDuringPulls += b.editsDuringPulls
        a.updatesDuringPaging += b.updatesDuringPaging
    }

    var summary: String {
        "\(seeds) seeds: \(localWrites) local writes, \(operationsSent) operations sent in \(pushes) pushes, "
            + "\(pulls) pulls, \(conflicts) conflicts settled by the handler; \(faults) faults injected "
            + "(\(lostResponses) lost responses, \(serverErrors) 500s, \(unavailable) 503s with Retry-After, "
            + "\(dropsMidPage) pages cut or GETs unanswered); \(uncertain) uncertain inserts settled by a lookup; "
            + "\(kills) kills mid-push or mid-pull; \(editsDuringPulls) local writes during pulls; "
            + "\(updatesDuringPaging) rows updated by another client during paging"
    }
}

/// A seed whose end state broke a rule; it names the seed and how to replay it.
struct SimulationFailure: Error, CustomStringConvertible {
    var seed: UInt64
    var message: String
    var description: String {
        "simulation seed \(seed) failed: \(message)\n  replay: FLATLAND_SIM_SEED_START=\(seed) FLATLAND_SIM_SEEDS=1 "
            + "swift test --skip-build --filter SimulationTests"
    }
}

/// The seeded simulation: 2–3 devices of one user write offline (inserts, updates and deletes,
/// the same rows among them), then sync (push, then pull) with faults injected on the server,
/// then sync without faults until quiet. Every choice comes from the seed.
///
/// The model keeps, per row, each write (by its idempotency key) with its unique value, when it
/// was first sent and when the server acknowledged it. A write is applied at some moment between
/// the two (a replay of a lost answer is answered with the first answer: the write may be long
/// older than its acknowledgement). The server may end with a write's value only if no
/// acknowledged write was first sent after that write was acknowledged: an acknowledged write may
/// be replaced only by a later one (one whose answer was lost counts), never lost. At the end every device's rows equal the
/// server's (text and version), no queue holds anything, no row is duplicated, and every 409 or
/// 412 the server answered a push went to the conflict handler, unless it was the device's own
/// earlier write coming back (a lost response, proven equal by the library).
struct Simulation {
    /// One write to a row: its value (nil: a delete), the step it was first sent at, and the
    /// step the server acknowledged it at (nil: sent, its answer lost).
    struct Write {
        var key: String
        var value: String?
        var sent: Int
        var acknowledged: Int?
    }

    let seed: UInt64
    private var random: SplitMix64
    private let clientWins: Bool
    /// The server behaviours of this seed: whether it honours idempotency keys (and says so at
    /// `$capabilities`), and whether devices keep connections alive.
    private let keys: Bool
    private let freshConnections: Bool
    /// Whether the server names the rows (the devices insert without ids, under local ids).
    private let serverIDs: Bool
    /// Whether devices edit rows while a push is out (a request held at the server meanwhile).
    private let editsDuringPushes: Bool
    /// Whether devices edit rows while a pull is out, and another client updates rows while a
    /// device is paging.
    private let editsDuringPulls: Bool
    private let updatesDuringPaging: Bool
    /// Whether devices are killed mid-push and mid-pull (and started again on their files).
    private let kills: Bool
    /// The server's page cap (below the pull's `$top` of 5, with a link to the next page), or
    /// nil for pages of `$top`.
    private let pageCap: Int?
    /// Whether the server writes its bodies in small chunks with pauses.
    private let slowBodies: Bool
    /// Whether the server's clock is coarse: one tick, moved on only between two devices' turns
    /// (``clockTicks``), so every row written in a turn (and rows updated by another client
    /// while a device pages) shares its `updatedAt`.
    private let coarseClock: Bool
    /// Whether the server returns rows tied on its `$orderby` in a random order per request.
    private let shuffledTies: Bool
    /// The coarse clock's ticks so far.
    private let clockTicks = Counter()
    /// The server id each local id became.
    private var aliases: [String: String] = [:]
    private var report = SimulationReport(seeds: 1)
    private var history: [String: [Write]] = [:]
    /// The model's clock: one tick per push outcome.
    private var step = 0
    /// Every value a device wrote, with its row.
    private var written: [String: String] = [:]
    private var nextValue = 0
    private var nextRow = 0

    /// `FLATLAND_SIM_TRACE=1` prints every write, push outcome and request of a run: for
    /// replaying one failing seed alone.
    static let tracing = ProcessInfo.processInfo.environment["FLATLAND_SIM_TRACE"] == "1"

    private func trace(_ line: @autoclosure () -> String) {
        if Simulation.tracing { print("sim \(seed): \(line())") }
    }

    /// Whether seeds may have devices killed mid-push and mid-pull, local writes during pulls,
    /// rows updated by another client during paging, server pages capped below `$top`, a coarse
    /// clock and tied rows in a random order: on by default, `FLATLAND_SIM_PAGING=0` turns them
    /// off (to tell a failure of theirs from another). They were off in CI while a few seeds in
    /// a hundred did not end on a loaded machine: a kill landing just as a request started lost
    /// the transport's completion (URLSessionTransport, fixed with a test of its own), and a
    /// page's deadline waited for the request it had cancelled (fixed too).
    static let pagingBehaviours = ProcessInfo.processInfo.environment["FLATLAND_SIM_PAGING"] != "0"

    /// Each request's deadline, pushes' and pulls': far above what a request takes here, even
    /// on a loaded machine, so that a request that never ends (a connection neither answered nor
    /// closed) shows as a failed request within the seed's own deadline.
    static let requestDeadline: TimeInterval = 20

    static let faultRounds = 4
    static let quietRounds = 12

    init(seed: UInt64) {
        self.seed = seed
        random = SplitMix64(seed: seed)
        clientWins = random.next() & 1 == 0
        keys = random.next() % 3 != 0
        freshConnections = random.next() & 1 == 0
        serverIDs = random.next() % 4 == 0
        editsDuringPushes = random.next() % 4 != 0
        // (Drawn always, so that the switch below leaves every other draw of a seed as it is.)
        let drawn = (random.next() % 3 != 0, random.next() % 3 == 0, random.next() % 3 != 0, random.next() % 3)
        let cap = 2 + Int(random.next() % 3)
        editsDuringPulls = drawn.0 && Simulation.pagingBehaviours
        updatesDuringPaging = drawn.1 && Simulation.pagingBehaviours
        kills = drawn.2 && Simulation.pagingBehaviours
        pageCap = drawn.3 == 0 && Simulation.pagingBehaviours ? cap : nil
        slowBodies = random.next() % 5 == 0
        // (Drawn last: every earlier draw of a seed stays as it was before these existed.)
        let clocks = (random.next() % 3 == 0, random.next() % 2 == 0)
        coarseClock = clocks.0 && Simulation.pagingBehaviours
        shuffledTies = clocks.1 && Simulation.pagingBehaviours
    }

    /// Whether a run of this seed is a function of the seed alone. Edits during pushes wait for a
    /// held request to reach the server, and kills, edits during pulls and updates during paging
    /// land at moments of the clock: a seed with any of them may take another path when run
    /// again (the invariants hold either way; the report's tallies may differ).
    var replaysExactly: Bool { !editsDuringPushes && !editsDuringPulls && !updatesDuringPaging && !kills }

    /// Runs the seed; throws ``SimulationFailure`` when a rule is broken.
    static func run(seed: UInt64) async throws -> SimulationReport {
        var simulation = Simulation(seed: seed)
        return try await simulation.run()
    }

    private mutating func fail(_ message: String) -> SimulationFailure {
        SimulationFailure(
            seed: seed,
            message: message
                + " (conflict rule: \(clientWins ? "client" : "server") wins; idempotency keys: \(keys); "
                + "connections: \(freshConnections ? "fresh" : "kept alive"); ids: \(serverIDs ? "the server's" : "the client's"); "
                + "edits during pushes: \(editsDuringPushes), pulls: \(editsDuringPulls); "
                + "updates during paging: \(updatesDuringPaging); kills: \(kills); "
                + "page cap: \(pageCap.map(String.init) ?? "none"); slow bodies: \(slowBodies); "
                + "coarse clock: \(coarseClock); shuffled ties: \(shuffledTies))"
        )
    }

    private mutating func run() async throws -> SimulationReport {
        var serving = TableServing(pageSize: pageCap)
        if coarseClock {
            let start = Int64(Date().timeIntervalSince1970) * 1_000_000
            let ticks = clockTicks
            serving.quirks.clock = { start + Int64(ticks.count) * 1_000_000 }
        }
        serving.quirks.shuffledTies = shuffledTies
        let server = SampleServer(
            configuration: .init(population: .init(users: 1, sessions: 1), tables: serving))
        let port = try await server.start()
        if ProcessInfo.processInfo.environment["FLATLAND_SIM_PROGRESS"] == "1" {
            FileHandle.standardError.write(Data("sim \(seed) starts\n".utf8))
        }
        trace("behaviours: \(fail("").message)")
        if slowBodies { server.knobs.chunkBodies(size: 97, pause: .milliseconds(1)) }
        // A server without keys says nothing of them (an Azure server has no `$capabilities`).
        if !keys { server.knobs.respond("/tables/$capabilities", status: 404, body: Array(#"{"error":"none"}"#.utf8)) }
        var devices: [SimDevice] = []
        do {
            let count = 2 + Int(random.next() % 2)
            for n in 0..<count {
                devices.append(
                    try SimDevice(
                        number: n + 1, port: port, keys: keys, freshConnections: freshConnections,
                        serverIDs: serverIDs))
            }
            let conflicts = Counter()
            let rule: ConflictResolution = clientWins ? .clientWins : .serverWins
            let handler: ConflictHandler = { _ in
                conflicts.add()
                return rule
            }
            for _ in 0..<Simulation.faultRounds {
                for device in devices { try writeOffline(device) }
                for device in shuffled(devices) {
                    try await syncStep(
                        device, server: server, port: port, faults: true, handler: handler, conflicts: conflicts)
                }
            }
            var quiet = false
            for _ in 0..<Simulation.quietRounds where !quiet {
                var sent = 0
                for device in devices {
                    sent += try await syncStep(
                        device, server: server, port: port, faults: false, handler: handler, conflicts: conflicts)
                }
                quiet = sent == 0
            }
            guard quiet else { throw fail("not quiet after \(Simulation.quietRounds) rounds without faults") }
            report.conflicts = conflicts.count
            trace("checks the end state")
            try await check(devices, port: port)
        } catch {
            for device in devices { await device.close() }
            await server.stop()
            throw error
        }
        trace("closes the devices")
        for device in devices { await device.close() }
        trace("stops the server")
        await server.stop()
        return report
    }

    private mutating func shuffled(_ devices: [SimDevice]) -> [SimDevice] {
        var devices = devices
        devices.shuffle(using: &random)
        return devices
    }

    private mutating func value(_ device: SimDevice, row: String) -> String {
        nextValue += 1
        let value = "d\(device.number)-w\(nextValue)"
        written[value] = row
        return value
    }

    /// A local insert: under an id of the device's making, or a local id where the server names
    /// the rows.
    private mutating func insert(_ device: SimDevice, during: String) throws {
        nextRow += 1
        nextValue += 1
        let text = "d\(device.number)-w\(nextValue)"
        var row: JSONObject = ["text": .string(text)]
        if !serverIDs { row["id"] = .string("s\(seed)-d\(device.number)-r\(nextRow)") }
        let inserted = try device.table.insert(row)
        let id = inserted.text("id") ?? ""
        written[text] = id
        trace("device \(device.number) inserts \(id) = \(text)\(during)")
    }

    /// The id a row is known by on the server: a local id's server id once it has one.
    private func canonical(_ id: String) -> String { aliases[id] ?? id }

    /// A few random local writes, offline: inserts, updates and deletes of any row it has.
    private mutating func writeOffline(_ device: SimDevice) throws {
        for _ in 0..<Int(random.next() % 6) {
            let ids = device.table.rows().compactMap { $0.text("id") }.sorted()
            let roll = random.next() % 100
            if ids.isEmpty || roll < 35 {
                try insert(device, during: "")
            } else if roll < 80 {
                let id = ids[Int(random.next() % UInt64(ids.count))]
                let text = value(device, row: id)
                trace("device \(device.number) updates \(id) = \(text)")
                try device.table.update(["id": .string(id), "text": .string(text)])
            } else {
                let id = ids[Int(random.next() % UInt64(ids.count))]
                trace("device \(device.number) deletes \(id)")
                try device.table.delete(id)
            }
            report.localWrites += 1
        }
    }

    /// One or two local writes while the push is out, to the row whose request is held and to
    /// any other: an update, a delete, or an insert.
    private mutating func writeDuringPush(_ device: SimDevice, row held: String, during: String = "a push") throws {
        let ids = device.table.rows().compactMap { $0.text("id") }.sorted()
        for n in 0..<(1 + Int(random.next() % 2)) {
            let roll = random.next() % 100
            let id =
                n == 0 && ids.contains(held) ? held : ids.isEmpty ? nil : ids[Int(random.next() % UInt64(ids.count))]
            guard let id, device.table.lookup(id) != nil, roll >= 15 else {
                try insert(device, during: " during \(during)")
                report.localWrites += 1
                continue
            }
            if roll < 75 {
                let text = value(device, row: id)
                trace("device \(device.number) updates \(id) = \(text) during \(during)")
                try device.table.update(["id": .string(id), "text": .string(text)])
            } else {
                trace("device \(device.number) deletes \(id) during \(during)")
                try device.table.delete(id)
            }
            report.localWrites += 1
        }
    }

    /// Queues zero to two random faults for the device's next requests.
    private mutating func injectFaults(_ server: SampleServer) {
        defer { trace("faults pending: \(server.tableFaults.pending)") }
        let writes = ["POST", "PATCH", "DELETE"]
        if random.chance(0.3) {
            server.tableFaults.inject(.loseResponse, method: (writes + ["GET"])[Int(random.next() % 4)])
        }
        if random.chance(0.2) {
            server.tableFaults.inject(.fail(status: 500), method: writes[Int(random.next() % 3)])
        }
        if random.chance(0.15) {
            let fault = TableFaults.Fault.fail(status: 503, retryAfter: "0")
            server.tableFaults.inject(fault, method: random.chance(0.5) ? "GET" : writes[Int(random.next() % 3)])
        }
        if random.chance(0.25) {
            // Skips the first few GETs sometimes, so the cut page is not always the first.
            let skip = Int(random.next() % 3)
            if skip > 0 { server.tableFaults.inject(.delay(.zero), method: "GET", times: skip) }
            server.tableFaults.inject(.dropMidBody(afterBytes: nil), method: "GET")
        }
    }

    /// One device meets the server: operations refused because the row is gone are dropped
    /// (a delete elsewhere wins) and the row reconciled away; then push, then pull when the
    /// queue is empty. Returns how many operations the push sent.
    @discardableResult
    private mutating func syncStep(
        _ device: SimDevice, server: SampleServer, port: Int, faults: Bool, handler: @escaping ConflictHandler,
        conflicts: Counter
    ) async throws -> Int {
        trace("device \(device.number) meets the server")
        // The coarse clock moves on between turns, never during one.
        clockTicks.add()
        let gone = try device.sync.failedOperations().filter { $0.status == 404 || $0.status == 410 }
        for operation in gone { try device.sync.cancel(operation.sequence) }
        if !gone.isEmpty { _ = try await device.table.reconcile(by: .listing) }
        // Inserts held uncertain (a lost answer, a server without keys): looked up by their
        // text, unique to each write. A fault may cut the lookup: the next round tries again.
        for operation in try device.sync.failedOperations() where operation.state == .uncertain {
            var failure: SyncError?
            do {
                let settled = try await device.sync.settle(operation.sequence, .lookUp(matching: ["text"]))
                report.uncertain += 1
                trace("device \(device.number) settles uncertain \(operation.itemID): \(settled)")
            } catch {
                failure = error
            }
            if let failure, failure.code != .http || !faults {
                throw fail("device \(device.number): settling uncertain \(operation.itemID) failed: \(failure)")
            }
        }
        _ = device.wire.drain()
        trace("device \(device.number) starts a push")

        // Sometimes the first operation's request is held at the server while the device edits
        // that row (and others) locally: the edits are queued behind it, never lost.
        let queue = try device.sync.operations()
        var editing: (method: String, path: String, id: String)?
        if faults, let first = queue.first, editsDuringPushes, random.chance(0.4) {
            let method = first.kind == .insert ? "POST" : first.kind == .delete ? "DELETE" : "PATCH"
            let path = first.kind == .insert ? "/tables/todoitem" : "/tables/todoitem/\(first.itemID)"
            server.tableFaults.inject(.delay(.milliseconds(200)), method: method)
            editing = (method, path, first.itemID)
        }
        if faults { injectFaults(server) }
        defer { server.tableFaults.reset() }
        let before = device.rows()
        let keys = Dictionary(queue.map { ($0.sequence, $0.key) }, uniquingKeysWith: { a, _ in a })
        let handled = conflicts.count
        // One request per operation: the wire log then sees every 409/412 a write got (inside
        // a batch they are in the batch's 200 body; BatchPushTests covers batches).
        let finished = Counter()
        let arrived = editing.map { server.testControls.requestCount($0.method, $0.path) } ?? 0
        let pushing = Task {
            let result = await device.sync.push(
                onConflict: handler,
                options: PushOptions(batching: .never, requestDeadline: Simulation.requestDeadline))
            finished.add()
            return result
        }
        if let editing {
            // Until the held request is at the server (an operation with nothing left to send
            // sends none: then until the push ends).
            while server.testControls.requestCount(editing.method, editing.path) <= arrived, finished.count == 0 {
                try await Task.sleep(for: .milliseconds(2))
            }
            try writeDuringPush(device, row: editing.id)
        }
        // Sometimes the device dies mid-push: its task is cancelled at a random moment, and it
        // starts again on its files.
        var killed = false
        if faults, kills, editing == nil, random.chance(0.2) {
            try await Task.sleep(for: .milliseconds(Int(random.next() % 12)))
            pushing.cancel()
            killed = true
        }
        let pushed = await pushing.value
        if killed {
            trace("device \(device.number) killed mid-push")
            try await device.reopen()
            report.kills += 1
        }
        if !faults, let reason = pushed.abortReason {
            throw fail("device \(device.number): a push without faults stopped: \(reason)")
        }
        report.pushes += 1
        report.operationsSent += pushed.outcomes.count
        let wire = device.wire.drain()
        trace("device \(device.number) pushes: \(wire.map(\.description).joined(separator: "; "))")
        // Each outcome's requests, in order: the value and the key it was sent with (a change
        // made while the push ran may have reached an operation not yet sent).
        // (An insert without an id is known by its text, unique to its write.)
        let named = wire.map { entry in
            var entry = entry
            if entry.rowID == nil, entry.method == .post, let text = entry.text { entry.rowID = written[text] }
            return entry
        }
        let writes = Dictionary(grouping: named.filter { $0.method != .get && $0.rowID != nil }, by: { $0.rowID ?? "" })
        var cursor: [String: Int] = [:]
        for outcome in pushed.outcomes {
            let entries = writes[outcome.id] ?? []
            var index = cursor[outcome.id] ?? 0
            var sent: WireLog.Entry?
            while index < entries.count {
                sent = entries[index]
                index += 1
                if sent?.status == outcome.status { break }
            }
            cursor[outcome.id] = index
            trace(
                "  \(outcome.kind) \(outcome.id) = \(sent?.text ?? before[outcome.id]?.text ?? "-"): \(outcome.result) \(outcome.status.map(String.init) ?? "-")"
            )
            step += 1
            let value = outcome.kind == .delete ? nil : sent?.text ?? before[outcome.id]?.text
            let acknowledged: Bool
            switch outcome.result {
            // (Nothing sent: its row was deleted locally, and the delete behind it settles it.)
            case .ok where outcome.status == nil: continue
            case .ok: acknowledged = true
            // (A 409 at the end: the row was gone and kept its id deleted; the delete stands.)
            case .resolved where clientWins && outcome.status != 409: acknowledged = true
            case .resolved: continue  // the server's row stays; this write was refused
            case .error where outcome.status == nil: acknowledged = false
            // (Sent twice, refused by what may be its own first arrival, not checked: a read of
            // the row failed. Maybe applied, as a lost answer; the next push checks it.)
            case .error where outcome.status == 409 || outcome.status == 412: acknowledged = false
            // (A 5xx may have been applied, as the engine takes it: a write sent again under its
            // key and answered later was applied here, at its first send, if at all.)
            case .error where (outcome.status ?? 0) >= 500: acknowledged = false
            case .error, .conflict, .uncertain: continue
            }
            guard let key = sent?.key ?? keys[outcome.sequence] else {
                throw fail("no key for operation \(outcome.sequence)")
            }
            var history = self.history[outcome.id, default: []]
            if let index = history.firstIndex(where: { $0.key == key }) {
                if acknowledged && history[index].acknowledged == nil { history[index].acknowledged = step }
            } else {
                history.append(Write(key: key, value: value, sent: step, acknowledged: acknowledged ? step : nil))
            }
            self.history[outcome.id] = history
        }
        // The server ids the device's local ids became.
        for id in Set(written.values) where id.hasPrefix("local-") && aliases[id] == nil {
            let resolved = device.table.resolve(id)
            if resolved != id { aliases[id] = resolved }
        }
        // Every 409/412 a write got went to the handler, or was the device's own write back.
        // (An update of a row gone on the server is a conflict too; the 409 of its insert again
        // under a deleted id settles it without the handler: the delete stands.)
        let writeConflicts = wire.filter { entry in
            entry.method != .get
                && (entry.status == 409 || entry.status == 412
                    || (entry.method != .delete && entry.method != .post
                        && (entry.status == 404 || entry.status == 410)))
        }.count
        let ownWrites = pushed.outcomes.filter { $0.result == .ok && ($0.status == 409 || $0.status == 412) }.count
        let standing = pushed.outcomes.filter { $0.result == .resolved && $0.kind == .update && $0.status == 409 }.count
        // (A write sent twice whose 409/412 could not be checked, a read of its row failing:
        // neither its own nor a conflict yet; it stays attempted, and the next push checks it.)
        let unchecked = pushed.outcomes.filter { $0.result == .error && ($0.status == 409 || $0.status == 412) }.count
        // (Client wins: the write sent again over the server's version may lose its answer too,
        // and be sent once more; its 412 is then its own arrival, checked, and the outcome is
        // resolved with that 412: one conflict to the handler, one own write. A resolved outcome
        // keeps the handler's 409/412 as its status when the resend had nothing to send, so
        // each such outcome may hold one own write, at most: no more than that is allowed.)
        let mayBeOwnAfterClientWins =
            clientWins
            ? pushed.outcomes.filter {
                $0.result == .resolved && ($0.status == 409 || $0.status == 412)
                    && !($0.kind == .update && $0.status == 409)
            }.count : 0
        let toHandler = conflicts.count - handled
        // (A device killed mid-push may die between a conflict's answer and its handler.)
        let accounted = toHandler + ownWrites + standing + unchecked
        if !killed, !(accounted...(accounted + mayBeOwnAfterClientWins)).contains(writeConflicts) {
            throw fail(
                "device \(device.number): the server answered \(writeConflicts) conflicts, the handler saw "
                    + "\(toHandler), \(ownWrites) were the device's own writes: \(pushed.outcomes)")
        }
        if pushed.outcomes.contains(where: { $0.result == .conflict }) {
            throw fail("device \(device.number): a conflict was left unsettled: \(pushed.outcomes)")
        }
        if try device.sync.operations().isEmpty {
            try await pullStep(device, server: server, port: port, faults: faults)
        }
        countFaults(wire + device.wire.drain())
        return pushed.outcomes.count
    }

    /// One pull of every row by pages of 5. With faults, sometimes a page is held at the server
    /// while the device writes locally (the pull must leave those rows to their operations) and
    /// another client updates a row (the pull must still end with every row once), and
    /// sometimes the device dies mid-pull and starts again (the next pull resumes from the key
    /// it committed).
    private mutating func pullStep(_ device: SimDevice, server: SampleServer, port: Int, faults: Bool) async throws {
        report.pulls += 1
        trace("device \(device.number) starts a pull")
        let holds = faults && (editsDuringPulls || updatesDuringPaging) && random.chance(0.4)
        let kill = faults && kills && !holds && random.chance(0.15)
        if holds {
            server.tableFaults.inject(.delay(.milliseconds(60)), method: "GET", pathPrefix: "/tables/todoitem")
        }
        let arrived = server.testControls.requestCount("GET", "/tables/todoitem")
        let finished = Counter()
        let table = device.table
        let pulling = Task { () -> String? in
            defer { finished.add() }
            do {
                _ = try await table.pull(
                    queryID: "all", options: PullOptions(pageSize: 5, requestDeadline: Simulation.requestDeadline))
                return nil
            } catch {
                return "\(error)"
            }
        }
        if holds {
            while server.testControls.requestCount("GET", "/tables/todoitem") <= arrived, finished.count == 0 {
                try await Task.sleep(for: .milliseconds(2))
            }
            if editsDuringPulls {
                let ids = device.table.rows().compactMap { $0.text("id") }.sorted()
                let id = ids.isEmpty ? "" : ids[Int(random.next() % UInt64(ids.count))]
                let before = report.localWrites
                try writeDuringPush(device, row: id, during: "a pull")
                report.editsDuringPulls += report.localWrites - before
            }
            if updatesDuringPaging { try await updateElsewhere(device, port: port) }
        }
        if kill {
            try await Task.sleep(for: .milliseconds(Int(random.next() % 12)))
            pulling.cancel()
        }
        let error = await pulling.value
        trace("device \(device.number) pulls: \(error ?? "ok")")
        if kill {
            trace("device \(device.number) killed mid-pull")
            try await device.reopen()
            report.kills += 1
        }
        // A cut page, a lost answer or a 5xx: the next round resumes from the last whole page.
        if let error, !faults { throw fail("device \(device.number): a pull without faults failed: \(error)") }
    }

    /// Another client (not one of the devices, not the library) updates a row unconditionally:
    /// a write the model records as acknowledged when it was answered 200, as sent and maybe
    /// applied when its answer was lost (its requests may take the faults injected too).
    private mutating func updateElsewhere(_ device: SimDevice, port: Int) async throws {
        let rows = device.table.rows().compactMap { $0.text("id") }.filter { !$0.hasPrefix("local-") }.sorted()
        guard !rows.isEmpty else { return }
        let id = rows[Int(random.next() % UInt64(rows.count))]
        nextValue += 1
        let text = "x-w\(nextValue)"
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/tables/todoitem/\(id)")!)
        request.httpMethod = "PATCH"
        request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"text":"\#(text)"}"#.utf8)
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let status = try? await (session.data(for: request).1 as? HTTPURLResponse)?.statusCode
        trace("another client updates \(id) = \(text) during paging: \(status.map(String.init) ?? "no answer")")
        guard status == nil || status == 200 else { return }
        step += 1
        written[text] = id
        history[id, default: []].append(
            Write(key: "elsewhere-\(nextValue)", value: text, sent: step, acknowledged: status == nil ? nil : step))
        report.updatesDuringPaging += 1
    }

    /// Counts the faults requests took, as the wire shows them: a write without an answer is a
    /// lost response, a GET without a whole answer a cut page, a 500 or a 503 that status.
    private mutating func countFaults(_ wire: [WireLog.Entry]) {
        for entry in wire {
            switch entry.status {
            case nil where entry.method == .get: report.dropsMidPage += 1
            case nil: report.lostResponses += 1
            case 500?: report.serverErrors += 1
            case 503?: report.unavailable += 1
            default: break
            }
        }
    }

    /// The end state: every rule of the model.
    private mutating func check(_ devices: [SimDevice], port: Int) async throws {
        let server = try await Simulation.serverRows(port: port)
        var ids = Set<String>()
        for (id, _) in server where !ids.insert(id).inserted { throw fail("row \(id) is on the server twice") }
        let rows = Dictionary(server, uniquingKeysWith: { a, _ in a })
        for device in devices {
            let queue = try device.sync.operations()
            if !queue.isEmpty {
                let operations = queue.map { "\($0.sequence) \($0.kind) \($0.itemID) \($0.state)" }
                throw fail("device \(device.number) still has \(queue.count) operations queued: \(operations)")
            }
            let local = device.rows()
            if local != rows {
                let differing = Set(local.keys).union(rows.keys).filter { local[$0] != rows[$0] }.sorted()
                throw fail(
                    "device \(device.number) differs from the server on "
                        + differing.prefix(5).map {
                            "\($0): local \(local[$0]?.description ?? "none"), server \(rows[$0]?.description ?? "none")"
                        }
                        .joined(separator: "; "))
            }
        }
        var history: [String: [Write]] = [:]
        for (id, writes) in self.history { history[canonical(id), default: []] += writes }
        for id in Set(rows.keys).union(history.keys).sorted() {
            let now = rows[id]?.text
            if let now, written[now].map(canonical) != id {
                throw fail("row \(id) holds \(now), which no device wrote to it")
            }
            let writes = history[id] ?? []
            // A soft delete is for good: a later update of the row (which a v2 server accepts)
            // leaves it deleted. A delete whose answer was lost may have been applied.
            let allowed: [String?]
            if writes.contains(where: { $0.value == nil && $0.acknowledged != nil }) {
                allowed = [nil]
            } else {
                // Absent while no write is acknowledged; else any write that no acknowledged
                // write was first sent after (a lost answer's write may have landed any time).
                let anyAcknowledged = writes.contains { $0.acknowledged != nil }
                allowed =
                    (anyAcknowledged ? [] : [nil])
                    + writes.filter { write in
                        let applied = write.acknowledged ?? Int.max
                        return !writes.contains { other in
                            other.key != write.key && other.acknowledged != nil && other.sent > applied
                        }
                    }
                    .map(\.value)
            }
            if !allowed.contains(now) {
                throw fail(
                    "row \(id) is \(now ?? "absent") on the server; acknowledged and later writes allow only "
                        + "\(allowed.map { $0 ?? "absent" })")
            }
        }
    }

    /// The server's rows (deleted ones aside) as its API lists them, read without the library.
    /// Every page of it, by `$skip` in id order: a server may cap its pages below `$top`.
    static func serverRows(port: Int) async throws -> [(String, SimRow)] {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        var rows: [(String, SimRow)] = []
        while true {
            let url = "http://127.0.0.1:\(port)/tables/todoitem?$orderby=id&$top=1000&$skip=\(rows.count)"
            var request = URLRequest(url: URL(string: url)!)
            request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
            let (data, _) = try await session.data(for: request)
            guard case .array(let items) = try JSONValue(parsing: Array(data)) else {
                throw SimulationFailure(seed: 0, message: "the server's listing is not an array")
            }
            if items.isEmpty { return rows }
            rows += items.compactMap { item -> (String, SimRow)? in
                guard case .object(let row) = item, let id = row.text("id") else { return nil }
                return (id, SimRow(text: row.text("text"), version: row.text("version")))
            }
        }
    }
}
