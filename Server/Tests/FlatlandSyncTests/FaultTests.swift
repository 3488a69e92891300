import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import Testing

/// Faults the push and the pull must survive, each checked by its exact end state: the server's
/// rows, the device's rows, the queue. (Lost inserts and updates, a 500 during a push and a
/// page cut mid-body are in `PushFaultTests` and `OfflineTests`.)
@Suite("Faults survived: lost answers, 5xx with Retry-After, slow servers, cancels, restarts")
struct FaultTests {
    /// The server's rows by id, read without the library; each id must be there once.
    static func serverRows(_ port: Int) async throws -> [String: SimRow] {
        let rows = try await Simulation.serverRows(port: port)
        #expect(Set(rows.map(\.0)).count == rows.count, "a row is on the server twice: \(rows.map(\.0))")
        return Dictionary(rows, uniquingKeysWith: { a, _ in a })
    }

    /// One device on a fresh server, closed afterwards.
    func withDevice(
        retry: RetryPolicy = .none, _ body: (SampleServer, Int, SimDevice) async throws -> Void
    ) async throws {
        try await withSyncServer { server, port in
            let device = try SimDevice(number: 1, port: port, retry: retry)
            do {
                try await body(server, port, device)
                await device.close()
            } catch {
                await device.close()
                throw error
            }
        }
    }

    /// A writer and a reader (retrying as `retry` says) on a fresh server, closed afterwards.
    func withPair(
        retry: RetryPolicy = .none, _ body: (SampleServer, Int, SimDevice, SimDevice) async throws -> Void
    ) async throws {
        try await withDevice { server, port, writer in
            let reader = try SimDevice(number: 2, port: port, retry: retry)
            do {
                try await body(server, port, writer, reader)
                await reader.close()
            } catch {
                await reader.close()
                throw error
            }
        }
    }

    /// Inserts `ids` with their id as text and pushes them.
    func seed(_ device: SimDevice, _ ids: [String]) async throws {
        for id in ids { try device.table.insert(["id": .string(id), "text": .string(id)]) }
        let pushed = await device.sync.push()
        #expect(pushed.succeeded)
    }

    @Test func aDeleteWhoseAnswerWasLostIsSentAgainAndDeletesOnce() async throws {
        try await withDevice { server, port, device in
            try await seed(device, ["a", "b"])
            try device.table.delete("a")
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "DELETE", times: 2)
            let first = await device.sync.push()
            #expect(first.aborted)
            #expect(try device.sync.operations().map(\.state) == [.attempted])
            // Committed on the server although nobody heard.
            #expect(try await FaultTests.serverRows(port).keys.sorted() == ["b"])
            // Sent again under the same idempotency key: answered with the first answer, not
            // applied twice (a server without keys answers 404, which is a success too).
            let second = await device.sync.push()
            #expect(second.succeeded && second.outcomes.map(\.status) == [200])
            #expect(try device.sync.operations().isEmpty)
            let rows = try await FaultTests.serverRows(port)
            #expect(rows.keys.sorted() == ["b"])
            #expect(device.rows() == rows)
        }
    }

    @Test func anUpdateWhoseAnswerWasLostAndThenEditedAgainEndsWithTheLatestEdit() async throws {
        let conflicts = Counter()
        try await withDevice { server, port, device in
            try await seed(device, ["u"])
            try device.table.update(["id": "u", "text": "second"])
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "PATCH", times: 2)
            #expect(await device.sync.push().aborted)
            // Edited again offline: queued behind the attempted update (which may have been
            // applied), never merged into it.
            try device.table.update(["id": "u", "text": "third"])
            #expect(try device.sync.operations().map(\.kind) == [.update, .update])
            let second = await device.sync.push { _ in
                conflicts.add()
                return .clientWins
            }
            // The replay is answered with its first answer ("second"), which gives the row its
            // version only; the edit behind it goes over that version: no conflict at all.
            #expect(second.succeeded && second.outcomes.map(\.result) == [.ok, .ok])
            #expect(conflicts.count == 0)
            let rows = try await FaultTests.serverRows(port)
            #expect(rows["u"]?.text == "third" && rows.count == 1)
            #expect(device.rows() == rows)
        }
    }

    @Test(arguments: ["PATCH", "POST"])
    func a503WithRetryAfterDuringAPushIsRecordedAndTheNextPushSendsIt(_ method: String) async throws {
        try await withDevice { server, port, device in
            try await seed(device, ["x"])
            try device.table.update(["id": "x", "text": "edited"])
            try device.table.insert(["id": "y", "text": "new"])
            server.tableFaults.inject(.fail(status: 503, retryAfter: "1"), method: method)
            let first = await device.sync.push()
            #expect(!first.aborted)
            #expect(first.outcomes.map(\.status) == (method == "PATCH" ? [503, 201] : [200, 503]))
            let failed = try device.sync.failedOperations()
            #expect(failed.map(\.itemID) == [method == "PATCH" ? "x" : "y"] && failed.first?.status == 503)
            let second = await device.sync.push()
            #expect(second.succeeded && second.outcomes.count == 1)
            #expect(try device.sync.operations().isEmpty)
            let rows = try await FaultTests.serverRows(port)
            #expect(rows.mapValues(\.text) == ["x": "edited", "y": "new"])
            #expect(device.rows() == rows)
        }
    }

    @Test func anIdempotentDeleteAnswered503IsTriedAgainAfterItsRetryAfter() async throws {
        let retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(10), maxDelay: .seconds(5))
        try await withDevice(retry: retry) { server, port, device in
            try await seed(device, ["d", "e"])
            try device.table.delete("d")
            server.tableFaults.inject(.fail(status: 503, retryAfter: "1"), method: "DELETE")
            let started = ContinuousClock.now
            let pushed = await device.sync.push()
            #expect(ContinuousClock.now - started >= .milliseconds(900))
            #expect(pushed.succeeded && pushed.outcomes.map(\.status) == [200])
            #expect(server.tableFaults.pending == 0)
            let rows = try await FaultTests.serverRows(port)
            #expect(rows.keys.sorted() == ["e"])
            #expect(device.rows() == rows)
        }
    }

    @Test(arguments: [500, 503])
    func aPullAnsweredWithAServerErrorKeepsItsTokenAndTheNextPullBringsEveryRowOnce(_ status: Int) async throws {
        try await withPair { server, port, writer, reader in
            try await seed(writer, (0..<30).map { String(format: "p%02d", $0) })
            // The second page fails.
            server.tableFaults.inject(.delay(.zero), method: "GET")
            server.tableFaults.inject(.fail(status: status, retryAfter: status == 503 ? "1" : nil), method: "GET")
            do throws(SyncError) {
                _ = try await reader.table.pull(queryID: "all", pageSize: 10)
                Issue.record("a \(status) during a pull went unnoticed")
            } catch {
                #expect(error.code == .http)
            }
            #expect(reader.rows().count == 10)
            let resumed = try await reader.table.pull(queryID: "all", pageSize: 10)
            #expect(resumed.rows >= 20)
            let rows = try await FaultTests.serverRows(port)
            #expect(rows.count == 30)
            #expect(reader.rows() == rows)
        }
    }

    @Test func aPullAnswered503IsTriedAgainAfterItsRetryAfterWithARetryPolicy() async throws {
        let retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(10), maxDelay: .seconds(5))
        try await withPair(retry: retry) { server, port, writer, reader in
            try await seed(writer, (0..<30).map { String(format: "r%02d", $0) })
            server.tableFaults.inject(.delay(.zero), method: "GET")
            server.tableFaults.inject(.fail(status: 503, retryAfter: "1"), method: "GET")
            let started = ContinuousClock.now
            let pulled = try await reader.table.pull(queryID: "all", pageSize: 10)
            #expect(ContinuousClock.now - started >= .milliseconds(900))
            // (Rows at the token's edge come again: `ge`, as the v2 clients ask.)
            #expect(pulled.rows >= 30 && pulled.pages >= 4, "\(pulled)")
            let rows = try await FaultTests.serverRows(port)
            #expect(reader.rows() == rows && rows.count == 30)
        }
    }

    @Test func aPushCancelledWhileTheServerIsSlowKeepsItsOperationsAndTheNextPushSendsEachOnce() async throws {
        try await withDevice { server, port, device in
            for id in ["c1", "c2", "c3"] { try device.table.insert(["id": .string(id), "text": .string(id)]) }
            server.tableFaults.inject(.delay(.zero), method: "POST")
            server.tableFaults.inject(.delay(.milliseconds(600)), method: "POST")
            let sync = device.sync
            // One request per operation, so that the cancel meets the second one in flight.
            let push = Task { await sync.push(options: PushOptions(batching: .never)) }
            while server.tableFaults.pending > 0 { try await Task.sleep(for: .milliseconds(10)) }
            push.cancel()
            let first = await push.value
            let states = try device.sync.operations().map(\.state)
            #expect(first.aborted)
            #expect(first.outcomes.map(\.result) == [.ok, .error])
            #expect(states == [.attempted, .pending])
            // The slow request still commits on the server; whatever the cancel did, the next push
            // leaves each row there once.
            try await Task.sleep(for: .milliseconds(800))
            let second = await device.sync.push()
            #expect(second.succeeded)
            #expect(try device.sync.operations().isEmpty)
            let rows = try await FaultTests.serverRows(port)
            #expect(rows.keys.sorted() == ["c1", "c2", "c3"])
            #expect(device.rows() == rows)
        }
    }

    @Test func aPullCancelledWhileTheServerIsSlowKeepsOnlyWholePages() async throws {
        try await withPair { server, port, writer, reader in
            try await seed(writer, (0..<25).map { String(format: "q%02d", $0) })
            server.tableFaults.inject(.delay(.zero), method: "GET")
            server.tableFaults.inject(.delay(.milliseconds(600)), method: "GET")
            let table = reader.table
            let pull = Task { try await table.pull(queryID: "all", pageSize: 10) }
            while server.tableFaults.pending > 0 { try await Task.sleep(for: .milliseconds(10)) }
            pull.cancel()
            let cancelled = await pull.result
            switch cancelled {
            case .success(let result):
                Issue.record("the cancelled pull ran to its end: \(result)")
            case .failure(let error):
                #expect((error as? SyncError)?.code == .cancelled)
            }
            // The first page, whole, with its token; nothing of the second.
            #expect(reader.rows().count == 10)
            _ = try await reader.table.pull(queryID: "all", pageSize: 10)
            let rows = try await FaultTests.serverRows(port)
            #expect(reader.rows() == rows && rows.count == 25)
        }
    }

    // (Disabled for a while after the merges: it hung in full runs, where a transport stalled on
    // URLSession's shared queue and tests blocking the concurrency pool froze every request.)
    @Test func aServerRestartedMidPushOnTheSameFileLosesAndDuplicatesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-restart-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serving = TableServing(databasePath: directory.appendingPathComponent("tables.sqlite").path)
        let first = SampleServer(configuration: .init(population: .init(users: 1, sessions: 1), tables: serving))
        let port = try await first.start()
        let device = try SimDevice(number: 1, port: port)
        let ids = (0..<10).map { String(format: "m%02d", $0) }
        for id in ids { try device.table.insert(["id": .string(id), "text": .string(id)]) }
        // Four inserts go through, the fifth is slow: the server stops while it is in flight.
        first.tableFaults.inject(.delay(.zero), method: "POST", times: 4)
        first.tableFaults.inject(.delay(.milliseconds(400)), method: "POST")
        let sync = device.sync
        // One request per operation, so that the server stops between two of them.
        let push = Task { await sync.push(options: PushOptions(batching: .never)) }
        while first.tableFaults.pending > 0 { try await Task.sleep(for: .milliseconds(5)) }
        await first.stop()
        let interrupted = await push.value
        #expect(interrupted.aborted)
        #expect(interrupted.outcomes.count >= 5 && interrupted.outcomes.count < ids.count)
        #expect(try !device.sync.operations().isEmpty)

        // A new server on the same file and port: the push goes on where it stopped.
        let second = SampleServer(
            configuration: .init(port: port, population: .init(users: 1, sessions: 1), tables: serving))
        _ = try await second.start()
        let resumed = await device.sync.push()
        let rows = try await FaultTests.serverRows(port)
        await second.stop()
        #expect(resumed.succeeded)
        #expect(try device.sync.operations().isEmpty)
        #expect(rows.keys.sorted() == ids)
        #expect(device.rows() == rows)
        await device.close()
    }
}
