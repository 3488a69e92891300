import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandSync
import Foundation
import Synchronization
import Testing

/// Runs `body`, cancelling it after `seconds`: a pull that would loop or hang fails the test
/// instead of holding the run. At the limit it returns at once, leaving a body that does not end
/// on its cancel behind (a task group would wait for it, and hang with it).
func withTimeLimit<R: Sendable>(
    _ seconds: Double, _ body: @escaping @Sendable () async throws -> R
) async throws -> R {
    let (stream, continuation) = AsyncStream.makeStream(of: Result<R, any Error>?.self)
    let running = Task {
        do {
            continuation.yield(.success(try await body()))
        } catch {
            continuation.yield(.failure(error))
        }
    }
    let timer = Task {
        try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        continuation.yield(nil)
    }
    defer { timer.cancel() }
    for await outcome in stream {
        guard let outcome else { break }
        return try outcome.get()
    }
    running.cancel()
    throw TimeLimitExceeded(seconds: seconds)
}

/// The guard itself: it must not wait for what it guards against.
@Suite("The time limit of the pull suites")
struct TimeLimitTests {
    @Test func aBodyThatIgnoresItsCancelIsLeftAtTheLimit() async throws {
        let ended = Mutex(false)
        await #expect(throws: TimeLimitExceeded.self) {
            try await withTimeLimit(0.2) {
                // Ends after 60 s whatever a cancel says: a guard that waited for it would
                // return after it ended.
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 60) { done.resume() }
                }
                ended.withLock { $0 = true }
                return 1
            }
        }
        #expect(!ended.withLock { $0 }, "the guard waited for the body to end")
        #expect(try await withTimeLimit(5) { 7 } == 7)
        await #expect(throws: TimeLimitExceeded.self) {
            try await withTimeLimit(0.1) { () async throws -> Int in
                try await Task.sleep(for: .seconds(30))
                return 0
            }
        }
    }
}

/// How long a pull these suites make may run before it counts as looping or hung. A guard, not
/// a speed check: a pull here takes a few seconds alone, but these suites run beside every other
/// of the bundle on a two-thread cooperative pool, where a loaded machine stretched pulls past a
/// minute; a pull that loops still fails, after five.
let hangGuardSeconds = 300.0

struct TimeLimitExceeded: Error, CustomStringConvertible {
    var seconds: Double
    var description: String { "still running after \(seconds) s" }
}

/// The findings of issue 36 on the pull side, each against a server whose behaviour is legal:
/// page caps, ties, orders, links, faults, trickles.
@Suite("Pulls by key: every row once, whatever a legal server does")
struct PullKeyTests {
    // MARK: Finding 2: a v2 pull stops at a short page

    /// A v2 server that caps its pages below `$top` (Node's `pageSize`) sends `Link: <…>;
    /// rel=next`: the pull reads every row, not the first page's.
    @Test(arguments: [LegalServer.Behaviour.Link.absoluteURL, .absolutePath, .queryString, .none])
    func aV2ServerThatCapsItsPagesGivesEveryRow(link: LegalServer.Behaviour.Link) async throws {
        let server = LegalServer(.init(protocol: .v2, pageCap: 50, link: link))
        server.insert(count: 230)
        try await withLegalDevice(server) { device in
            _ = try await device.table.pull(queryID: "all", pageSize: 1000)
            #expect(device.matchesServer(), "missing \(device.missing().count) rows")
        }
    }

    /// 500 rows share one `updatedAt` and the server caps its pages at 50: one pull brings all
    /// 500, not the same 50 on every pull.
    @Test func fiveHundredTiedRowsBehindAPageCapArriveInOnePull() async throws {
        let server = LegalServer(.init(protocol: .v2, pageCap: 50, rowsPerTick: 1000))
        server.insert(count: 500)
        try await withLegalDevice(server) { device in
            _ = try await withTimeLimit(hangGuardSeconds) {
                try await device.table.pull(queryID: "all", pageSize: 1000)
            }
            #expect(device.local().count == 500)
            #expect(device.matchesServer())
        }
    }

    // MARK: Finding 3: a v3 pull skips rows that share the token's timestamp

    /// Rows written in the same tick as the last row pulled arrive with the next pull.
    @Test(arguments: [TableProtocol.v2, .v3])
    func rowsOfTheKeysTickWrittenAfterAPullArriveWithTheNext(version: TableProtocol) async throws {
        let server = LegalServer(.init(protocol: version, rowsPerTick: 100))
        server.insert(count: 150)  // ticks 0 (r0000–r0099) and 1 (r0100–r0149)
        try await withLegalDevice(server) { device in
            _ = try await device.table.pull(queryID: "all")
            #expect(device.matchesServer())
            server.insert(count: 30)  // r0150–r0179, still tick 1
            _ = try await device.table.pull(queryID: "all")
            #expect(device.matchesServer(), "missing \(device.missing())")
        }
    }

    /// A pull of 500 tied rows that fails after two pages and is pulled again gets the other
    /// rows: it reads the key's tick again from its start (a row written into it meanwhile may
    /// sit behind the key), and the rows it holds as they are count as none.
    @Test(arguments: [TableProtocol.v2, .v3])
    func aTiedPullResumedAfterAFailureLosesNothing(version: TableProtocol) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version, rowsPerTick: 1000)
        behaviour.failsListings = [3]
        let server = LegalServer(behaviour)
        server.insert(count: 500)
        try await withLegalDevice(server) { device in
            await #expect(throws: SyncError.self) { try await device.table.pull(queryID: "all") }
            let committed = device.local().count
            #expect(committed > 0 && committed < 500)
            let before = server.requests.count
            let result = try await device.table.pull(queryID: "all")
            #expect(device.matchesServer(), "missing \(device.missing().count)")
            // The resumed pull starts at the key's tick, and counts only the rows it lacked.
            let resumed = try #require(server.requests.dropFirst(before).first)
            #expect(resumed.contains("updatedAt%20ge%20") && !resumed.contains("id%20gt%20"), "\(resumed)")
            #expect(result.rows == 500 - committed, "\(result)")
        }
    }

    // MARK: Finding 4: no tie-breaker

    /// Tied rows in a new order on every request: paging by the key (with `id` as the
    /// tie-breaker) gets every row once.
    @Test(arguments: [TableProtocol.v2, .v3], [UInt64(1), 2, 3])
    func tiesInARandomOrderOnEveryRequestMissNoRow(version: TableProtocol, seed: UInt64) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version, rowsPerTick: 1000, shufflesTies: true, seed: seed)
        behaviour.pageSize = 50
        let server = LegalServer(behaviour)
        server.insert(count: 500)
        try await withLegalDevice(server) { device in
            let pulled = try await device.table.pull(queryID: "all")
            #expect(device.matchesServer(), "missing \(device.missing().count)")
            #expect(pulled.rows == 500)
            #expect(server.requests.allSatisfy { $0.contains("$orderby=updatedAt,id") })
        }
    }

    // MARK: Finding 8: paging loops

    /// A `nextLink` equal to the request's own URL is a typed error, not a loop.
    @Test(arguments: [TableProtocol.v2, .v3])
    func aNextLinkToTheSamePageIsAnError(version: TableProtocol) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version, pageCap: 10, link: .absoluteURL)
        behaviour.selfLink = true
        let server = LegalServer(behaviour)
        server.insert(count: 30)
        try await withLegalDevice(server) { device in
            let table = device.table
            do {
                _ = try await withTimeLimit(hangGuardSeconds) { try await table.pull(queryID: "all") }
                Issue.record("a link to the same page was followed to an end")
            } catch let error as SyncError {
                #expect(error.code == .noProgress)
            }
            #expect(server.requests.count < 5)
        }
    }

    /// A v2 server that ignores `$skip`: a full read gets every row and ends.
    @Test func aServerThatIgnoresSkipStillGivesAFullRead() async throws {
        var behaviour = LegalServer.Behaviour(protocol: .v2, link: LegalServer.Behaviour.Link.none)
        behaviour.ignoresSkip = true
        let server = LegalServer(behaviour)
        server.insert(count: 120)
        try await withLegalDevice(server) { device in
            let table = device.table
            _ = try await withTimeLimit(hangGuardSeconds) { try await table.pull() }
            #expect(device.matchesServer())
        }
    }

    /// The official clients' paging against a server that ignores `$skip`: a typed error,
    /// never a loop.
    @Test func officialPagingAgainstAServerThatIgnoresSkipIsAnError() async throws {
        var behaviour = LegalServer.Behaviour(protocol: .v2, link: LegalServer.Behaviour.Link.none)
        behaviour.ignoresSkip = true
        let server = LegalServer(behaviour)
        server.insert(count: 120)
        try await withLegalDevice(server) { device in
            let table = device.table
            do {
                _ = try await withTimeLimit(hangGuardSeconds) {
                    try await table.pull(options: PullOptions(paging: .officialClients))
                }
                Issue.record("the same page was read to an end")
            } catch let error as SyncError {
                #expect(error.code == .noProgress)
            }
        }
    }

    // MARK: Finding 9: no overall deadline

    /// A server that trickles its answer (a byte at a time, well within the idle timeout) is cut
    /// at the request's deadline.
    @Test func aTricklingAnswerIsCutAtTheDeadline() async throws {
        var behaviour = LegalServer.Behaviour(protocol: .v2)
        behaviour.chunkSize = 1
        behaviour.chunkDelay = .milliseconds(50)
        let server = LegalServer(behaviour)
        server.insert(count: 200)  // about 30 KB: 25 minutes at a byte every 50 ms
        try await withLegalDevice(server) { device in
            let table = device.table
            let start = ContinuousClock.now
            do {
                _ = try await withTimeLimit(hangGuardSeconds) {
                    try await table.pull(queryID: "all", options: PullOptions(requestDeadline: 1))
                }
                Issue.record("the trickle was read to its end")
            } catch let error as SyncError {
                #expect(error.code == .deadline)
                #expect(error.tableError?.httpError?.code == .transport)
            }
            // Cut at its deadline (1 s), not read to its end; the margin is for a loaded machine,
            // whose cooperative threads other tests may hold.
            #expect(ContinuousClock.now - start < .seconds(90))
            #expect(device.local().isEmpty)
        }
    }

    /// A page whose transport does not end on a cancel (it waits for its own idle timeout, 200 s
    /// here) still cannot hold the pull past the request's deadline: the pull stops
    /// waiting for it then, and leaves it behind.
    @Test func aPageThatIgnoresItsCancelIsLeftAtTheDeadline() async throws {
        var behaviour = LegalServer.Behaviour(protocol: .v3)
        behaviour.pageSize = 20
        behaviour.stallsAfter = 100
        behaviour.stallIgnoresCancel = true
        behaviour.failsListings = []
        let server = LegalServer(behaviour)
        server.insert(count: 50)
        // The transport's idle timeout: what the page would hold the pull for.
        let device = try LegalDevice(server, timeout: 200)
        defer { device.remove() }
        let table = device.table
        let start = ContinuousClock.now
        do {
            _ = try await withTimeLimit(hangGuardSeconds) {
                try await table.pull(queryID: "all", options: PullOptions(requestDeadline: 1))
            }
            Issue.record("a stalled page was read to its end")
        } catch let error as SyncError {
            #expect(error.code == .deadline)
        }
        // Well below the transport's idle timeout, with a margin for a loaded machine (whose
        // cooperative threads other tests may hold).
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(100), "\(elapsed)")
        #expect(device.local().isEmpty)
        server.releaseStalls()
        await device.close()
    }

    /// A body that stops is cut by the session's idle timeout; the next pull resumes.
    @Test func aStalledBodyIsCutAndThePullResumes() async throws {
        var behaviour = LegalServer.Behaviour(protocol: .v3)
        behaviour.pageSize = 20
        behaviour.stallsAfter = 100
        behaviour.failsListings = []
        let server = LegalServer(behaviour)
        server.insert(count: 60)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-legal-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let device = try LegalDevice(server, directory: directory, timeout: 0.5)
        await #expect(throws: SyncError.self) { try await device.table.pull(queryID: "all") }
        server.behaviour.stallsAfter = nil
        _ = try await device.table.pull(queryID: "all")
        #expect(device.matchesServer())
        await device.close()
    }

    // MARK: Finding 10: answers that are not pages, one id twice

    /// A 200 whose body is an object that is not a page is an error, and changes nothing.
    @Test(arguments: [TableProtocol.v2, .v3])
    func aBodyThatIsNotAPageIsAnError(version: TableProtocol) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version)
        behaviour.bodyOverride = #"{"message":"maintenance until noon"}"#
        let server = LegalServer(behaviour)
        server.insert(count: 3)
        try await withLegalDevice(server) { device in
            do {
                _ = try await device.table.pull(queryID: "all")
                Issue.record("an answer that is not a page was a successful pull")
            } catch let error as SyncError {
                #expect(error.code == .invalidResponse)
                #expect(error.message.contains("not a page"))
            }
            #expect(device.local().isEmpty)
        }
    }

    /// A page holding one id twice keeps the copy with the later `updatedAt`, whichever comes
    /// first.
    @Test(arguments: [true, false])
    func aPageWithOneIDTwiceKeepsTheNewerCopy(newerFirst: Bool) async throws {
        let newer = #"{"id":"a","text":"new","updatedAt":"2024-01-01T00:00:02.000Z","version":"v2","deleted":false}"#
        let older = #"{"id":"a","text":"old","updatedAt":"2024-01-01T00:00:01.000Z","version":"v1","deleted":false}"#
        let calls = Mutex(0)
        let transport = StubTransport { _ in
            let call = calls.withLock { n in
                n += 1
                return n
            }
            return (200, [:], call == 1 ? "[" + (newerFirst ? newer + "," + older : older + "," + newer) + "]" : "[]")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-twice-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Backend.Configuration(makeTransport: { transport })
        configuration.addTableHeaders(protocol: .v2)
        let session = try Session(
            user: "u", environment: try LegalServer.environment, registry: try EntityRegistry([TodoItem.self]),
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        let sync = try SyncContext(session: session, options: TableOptions(protocol: .v2))
        let table = sync.table("things")
        _ = try await table.pull(queryID: "all")
        #expect(table.lookup("a")?.text("text") == "new")
        #expect(table.lookup("a")?.text("version") == "v2")
        await session.close()
    }

    // MARK: Keys, tokens and options

    /// A delta token kept as a date (by an older version, or by the official clients' paging)
    /// is read as the key before that date's rows: rows of its tick written later arrive.
    @Test func aTokenKeptAsADateIsReadAndBecomesAKey() async throws {
        let server = LegalServer(.init(protocol: .v3, rowsPerTick: 100))
        server.insert(count: 150)
        try await withLegalDevice(server) { device in
            let official = try await device.table.pull(
                queryID: "all", options: PullOptions(paging: .officialClients))
            #expect(official.tokenID == nil)
            #expect(device.matchesServer())
            server.insert(count: 30)  // the token's tick
            let pulled = try await device.table.pull(queryID: "all")
            #expect(device.matchesServer(), "missing \(device.missing())")
            #expect(pulled.tokenID == "r0179")
            #expect(pulled.token == LegalServer.timestamp(server.rows()["r0179"]!.updatedAt))
        }
    }

    /// The default query string: the key, `id` as the tie-breaker, `$top`, dates at full
    /// precision; the official clients' strings stay available byte for byte.
    @Test func theQueryStringsOfBothPagings() async throws {
        let server = LegalServer(.init(protocol: .v2, rowsPerTick: 3))
        server.insert(count: 5)
        try await withLegalDevice(server) { device in
            _ = try await device.table.pull(queryID: "all", pageSize: 3)
            #expect(
                server.requests.first
                    == "/api/tables/things?$orderby=updatedAt,id&$top=3&__includeDeleted=true")
            #expect(
                server.requests.dropFirst().first
                    == "/api/tables/things?$filter=((updatedAt%20ge%20datetimeoffset'2024-01-01T00:00:00.000Z')%20and%20((updatedAt%20gt%20datetimeoffset'2024-01-01T00:00:00.000Z')%20or%20(id%20gt%20'r0002')))&$orderby=updatedAt,id&$top=3&__includeDeleted=true"
            )
            _ = try await device.table.pull(
                queryID: "official", options: PullOptions(paging: .officialClients, pageSize: 3))
            #expect(
                server.requests.contains(
                    "/api/tables/things?$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00:00:00.0000000%2B00:00')&$orderby=updatedAt&$skip=0&$top=3&__includeDeleted=true"
                ))
        }
    }

    /// Bad options are refused before any request.
    @Test func badOptionsAreRefused() async throws {
        let server = LegalServer()
        try await withLegalDevice(server) { device in
            for options in [PullOptions(pageSize: 0), PullOptions(requestDeadline: 0)] {
                await #expect(throws: SyncError.self) { try await device.table.pull(options: options) }
            }
            #expect(server.requests.isEmpty)
        }
    }
}
