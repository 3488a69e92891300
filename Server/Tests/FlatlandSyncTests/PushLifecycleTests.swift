import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import Synchronization
import Testing

/// The server's rows of `todoitem` by id, read without the library.
func serverRows(_ port: Int) async throws -> [(String, SimRow)] {
    try await Simulation.serverRows(port: port)
}

/// An operation's life through a push: local writes while it is being sent, lost answers, rows
/// the server no longer has, queue rows a newer version wrote, and cancelling.
@Suite("The operation lifecycle: a write while its row's operation is sent, lost answers, rows gone on the server")
struct PushLifecycleTests {
    // MARK: Finding 1: a local write while its row's operation is being sent

    @Test func aLocalDeleteWhileTheRowsUpdateIsBeingSentStaysDeletedAndReachesTheServer() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "d", "text": "one"])
            #expect(await device.sync.push().succeeded)
            try todos.update(["id": "d", "text": "two"])
            server.tableFaults.inject(.delay(.milliseconds(500)), method: "PATCH")
            let push = Task { await device.sync.push() }
            try await server.testControls.waitForRequests("PATCH", "/tables/todoitem/d", count: 1)
            try todos.delete("d")
            #expect(try device.sync.operations().map(\.kind) == [.update, .delete])
            let first = await push.value
            #expect(first.outcomes.map(\.kind) == [.update])
            // The update's answer brings the row's new version, not the row back.
            #expect(todos.lookup("d") == nil)
            #expect(try device.sync.operations().map(\.kind) == [.delete])
            #expect(await device.sync.push().succeeded)
            #expect(try await serverRows(port).isEmpty)
            #expect(device.sync.table("todoitem").rows().isEmpty)
            await device.close()
        }
    }

    @Test(arguments: [PushOptions.Batching.never, .automatic])
    func aLocalUpdateThroughAnotherContextWhileTheUpdateIsBeingSentIsQueuedBehindIt(
        _ batching: PushOptions.Batching
    ) async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            // A second context on the same session: an app's other screen, a background task.
            let other = try SyncContext(session: device.session, options: device.sync.options)
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "u", "text": "one"])
            try todos.insert(["id": "v", "text": "one"])
            #expect(await device.sync.push().succeeded)
            try todos.update(["id": "u", "text": "two"])
            try todos.update(["id": "v", "text": "two"])
            let path = batching == .never ? "/tables/todoitem/u" : "/tables/$batch"
            let method = batching == .never ? "PATCH" : "POST"
            server.tableFaults.inject(.delay(.milliseconds(500)), method: method, pathPrefix: path)
            let push = Task { await device.sync.push(options: PushOptions(batching: batching)) }
            try await server.testControls.waitForRequests(method, path, count: batching == .never ? 1 : 2)
            try other.table("todoitem").update(["id": "u", "text": "three"])
            #expect(try device.sync.operations().map(\.itemID) == ["u", "v", "u"])
            _ = await push.value
            // The answer gave the row its new version; its fields are the local write's.
            #expect(todos.lookup("u")?.text("text") == "three")
            #expect(try device.sync.operations().map(\.itemID) == ["u"])
            #expect(await device.sync.push().succeeded)
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            #expect(rows["u"]?.text == "three")
            #expect(rows["v"]?.text == "two")
            await device.close()
        }
    }

    /// Another device deleted the row; this one updates it, and edits it again while the update
    /// is being sent (an operation behind it). Client wins: the update becomes the row's insert
    /// again, which the server refuses (it keeps the id deleted), so the delete stands and the
    /// row goes locally with both of its operations. (The edit behind it stayed queued, and
    /// failed at every push after on a row that was not there; seed 467 of the simulation.)
    @Test func aClientWinsUpdateOfARowDeletedElsewhereTakesTheEditsBehindItAlong() async throws {
        try await withSyncServer { server, port in
            let one = try Device(port: port)
            let two = try Device(port: port)
            defer {
                one.remove()
                two.remove()
            }
            try one.sync.table("todoitem").insert(["id": "g", "text": "one"])
            #expect(await one.sync.push().succeeded)
            _ = try await two.sync.table("todoitem").pull(queryID: "all")
            try one.sync.table("todoitem").delete("g")
            #expect(await one.sync.push().succeeded)
            let todos = two.sync.table("todoitem")
            try todos.update(["id": "g", "text": "two"])
            server.tableFaults.inject(.delay(.milliseconds(500)), method: "PATCH")
            let push = Task { await two.sync.push(onConflict: ConflictPolicy.clientWins) }
            try await server.testControls.waitForRequests("PATCH", "/tables/todoitem/g", count: 1)
            try todos.update(["id": "g", "text": "three"])
            #expect(try two.sync.operations().count == 2)
            let pushed = await push.value
            #expect(!pushed.aborted, "\(pushed.abortReason ?? "")")
            #expect(try two.sync.operations().isEmpty)
            #expect(todos.lookup("g") == nil)
            #expect(try await serverRows(port).isEmpty)
            let next = await two.sync.push(onConflict: ConflictPolicy.clientWins)
            #expect(next.succeeded && next.outcomes.isEmpty, "\(next.outcomes)")
            await one.close()
            await two.close()
        }
    }

    // MARK: Finding 6: a re-sent write carries its body

    @Test(arguments: ["PATCH", "POST"])
    func aWriteWhoseAnswerWasLostOnAKeptAliveConnectionFailsAtOnceAndIsSentAgainWithItsBody(_ method: String)
        async throws
    {
        try await withSyncServer { server, port in
            // No fresh connection per request: the connection of the first push is kept alive.
            // A long timeout: a request sent again without its body would wait for all of it.
            let device = try Device(port: port, timeout: 30)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "k0", "text": "seed"])
            #expect(await device.sync.push().succeeded)
            if method == "PATCH" {
                try todos.update(["id": "k0", "text": "edited"])
            } else {
                try todos.insert(["id": "k1", "text": "new"])
            }
            server.tableFaults.inject(.loseResponse, method: method, pathPrefix: "/tables/todoitem")
            let path = method == "PATCH" ? "/tables/todoitem/k0" : "/tables/todoitem"
            let before = server.testControls.requestCount(method, path)
            let started = ContinuousClock.now
            let first = await device.sync.push()
            let waited = ContinuousClock.now - started
            // A lost answer, seen as one at once (not a request stalled until its timeout), and
            // sent again at once with its body (its id or its If-Match makes that safe).
            #expect(waited < .seconds(15), "the push waited \(waited): \(first.abortReason ?? "")")
            #expect(first.succeeded, "\(first)")
            // (Two at least: libcurl's own attempt to send it again on the dead connection, which
            // the transport cuts, may reach the server as a head without its body.)
            #expect(server.testControls.requestCount(method, path) - before >= 2)
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            #expect(rows["k0"]?.text == (method == "PATCH" ? "edited" : "seed"))
            if method == "POST" { #expect(rows["k1"]?.text == "new") }
            #expect(rows.count == (method == "POST" ? 2 : 1))
            await device.close()
        }
    }

    // MARK: Finding 7: 404/410 on an update or a delete

    /// A row `g` on a server that deletes rows for good (an update of a row it no longer has
    /// is a 404), deleted there by another device while `one` edits it.
    func withRowGoneOnTheServer(_ body: (SampleServer, Int, Device) async throws -> Void) async throws {
        let serving = TableServing(
            tables: [TableDefinition(name: "todoitem", softDelete: false)], protocols: [.v1, .v2, .v3])
        try await withSyncServer(serving) { server, port in
            let one = try Device(port: port)
            let two = try Device(port: port)
            defer {
                one.remove()
                two.remove()
            }
            try one.sync.table("todoitem").insert(["id": "g", "text": "mine"])
            #expect(await one.sync.push().succeeded)
            _ = try await two.sync.table("todoitem").pull()
            try two.sync.table("todoitem").delete("g")
            #expect(await two.sync.push().succeeded)
            await two.close()
            try one.sync.table("todoitem").update(["id": "g", "text": "mine, edited"])
            try await body(server, port, one)
            await one.close()
        }
    }

    @Test func anUpdateOfARowTheServerNoLongerHasGoesToTheHandlerAndServerWinsRemovesItLocally() async throws {
        try await withRowGoneOnTheServer { _, port, one in
            let seen = ConflictLog()
            let pushed = await one.sync.push(onConflict: { conflict in
                seen.add(conflict.status)
                return .serverWins
            })
            #expect(seen.statuses.count == 1 && [404, 410].contains(seen.statuses.first ?? 0))
            #expect(pushed.succeeded && pushed.outcomes.map(\.result) == [.resolved])
            #expect(one.sync.table("todoitem").lookup("g") == nil)
            #expect(try one.sync.operations().isEmpty)
            #expect(try await serverRows(port).isEmpty)
            // Nothing left to re-push: a pull is clean.
            _ = try await one.sync.table("todoitem").pull(queryID: "all")
        }
    }

    @Test func anUpdateOfARowTheServerNoLongerHasIsRecreatedWhenTheClientWins() async throws {
        try await withRowGoneOnTheServer { _, port, one in
            let pushed = await one.sync.push(onConflict: ConflictPolicy.clientWins)
            #expect(pushed.succeeded && pushed.outcomes.map(\.result) == [.resolved])
            #expect(try one.sync.operations().isEmpty)
            let rows = try await serverRows(port)
            #expect(rows.count == 1 && rows.first?.0 == "g" && rows.first?.1.text == "mine, edited")
            #expect(one.sync.table("todoitem").lookup("g")?.text("text") == "mine, edited")
        }
    }

    @Test func anUpdateOfARowTheServerNoLongerHasWithoutAHandlerIsAConflictThatCanBeCancelled() async throws {
        try await withRowGoneOnTheServer { _, _, one in
            let pushed = await one.sync.push()
            #expect(pushed.outcomes.map(\.result) == [.conflict])
            let stuck = try #require(try one.sync.failedOperations().first)
            #expect([404, 410].contains(stuck.status ?? 0))
            try one.sync.cancel(stuck.sequence)
            #expect(try one.sync.operations().isEmpty)
            // The local row stays as it is until a pull or a reconcile says otherwise.
            #expect(one.sync.table("todoitem").lookup("g")?.text("text") == "mine, edited")
            #expect(await one.sync.push().succeeded)
        }
    }

    /// Found by the seeded simulation (seed 41 with updates by another client during paging):
    /// a local delete refused with 412 and settled server-wins dropped the delete but left the
    /// row deleted locally, so a device whose pull had passed the row's new version never had it
    /// again while the server kept it.
    @Test func aDeleteRefusedBecauseTheRowChangedElsewhereBringsTheServersRowBackWhenTheServerWins() async throws {
        try await withSyncServer { _, port in
            let one = try Device(port: port)
            let two = try Device(port: port)
            defer {
                one.remove()
                two.remove()
            }
            try one.sync.table("todoitem").insert(["id": "w", "text": "first"])
            #expect(await one.sync.push().succeeded)
            _ = try await two.sync.table("todoitem").pull()
            try two.sync.table("todoitem").update(["id": "w", "text": "second"])
            #expect(await two.sync.push().succeeded)
            try one.sync.table("todoitem").delete("w")
            let pushed = await one.sync.push(onConflict: ConflictPolicy.serverWins)
            #expect(pushed.outcomes.map(\.result) == [.resolved], "\(pushed)")
            #expect(pushed.outcomes.first?.status == 412)
            #expect(try one.sync.operations().isEmpty)
            // The server's row, here at once, not only after a pull that may never bring it.
            #expect(one.sync.table("todoitem").lookup("w")?.text("text") == "second")
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            #expect(rows["w"]?.text == "second")
            await one.close()
            await two.close()
        }
    }

    /// Found by the seeded simulation (seed 35 with kills and edits during pulls): an update
    /// of a row another device had deleted (a server that keeps deleted rows answers 412 with
    /// the deleted row) settled server-wins took that row as the answer and kept it locally as
    /// a live row, which no later pull removed (its key had passed the delete).
    @Test(arguments: [PushOptions.Batching.never, .automatic])
    func anUpdateRefusedBecauseTheRowWasDeletedElsewhereRemovesItWhenTheServerWins(
        _ batching: PushOptions.Batching
    ) async throws {
        try await withSyncServer { _, port in
            let one = try Device(port: port)
            let two = try Device(port: port)
            defer {
                one.remove()
                two.remove()
            }
            try one.sync.table("todoitem").insert(["id": "z", "text": "first"])
            #expect(await one.sync.push().succeeded)
            _ = try await two.sync.table("todoitem").pull()
            try two.sync.table("todoitem").delete("z")
            #expect(await two.sync.push().succeeded)
            try one.sync.table("todoitem").update(["id": "z", "text": "second"])
            let pushed = await one.sync.push(
                onConflict: ConflictPolicy.serverWins, options: PushOptions(batching: batching))
            #expect(pushed.outcomes.map(\.result) == [.resolved], "\(pushed)")
            #expect(try one.sync.operations().isEmpty)
            // Gone locally at once, as on the server.
            #expect(one.sync.table("todoitem").lookup("z") == nil)
            #expect(try await serverRows(port).isEmpty)
            _ = try await one.sync.table("todoitem").pull(queryID: "all")
            #expect(one.sync.table("todoitem").lookup("z") == nil)
            await one.close()
            await two.close()
        }
    }

    // MARK: The order of a row's operations

    /// Found by the seeded simulation (seed 162 with edits during pushes): an update queued
    /// behind an insert that failed (a 500) was sent while the insert was not on the server; the
    /// 404 it got went to the handler, whose server-wins removed the row locally, and the insert
    /// was then stuck for good with its row gone, its change lost.
    @Test(arguments: [PushOptions.Batching.never, .automatic])
    func anUpdateBehindAFailedInsertOfItsRowWaitsForIt(_ batching: PushOptions.Batching) async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "f", "text": "one"])
            server.tableFaults.inject(.fail(status: 500), method: "POST", pathPrefix: "/tables/todoitem")
            let first = await device.sync.push(onConflict: ConflictPolicy.serverWins)
            #expect(first.outcomes.map(\.result) == [.error])
            try todos.update(["id": "f", "text": "two"])
            #expect(try device.sync.operations().map(\.kind) == [.insert, .update])
            server.tableFaults.inject(.fail(status: 500), method: "POST", pathPrefix: "/tables/todoitem")
            let second = await device.sync.push(
                onConflict: ConflictPolicy.serverWins, options: PushOptions(batching: batching))
            // The update waits behind its insert: nothing of the row went but the insert.
            #expect(server.testControls.requestCount("PATCH", "/tables/todoitem/f") == 0)
            #expect(second.outcomes.map(\.kind) == [.insert], "\(second)")
            #expect(todos.lookup("f")?.text("text") == "two")
            let third = await device.sync.push(
                onConflict: ConflictPolicy.serverWins, options: PushOptions(batching: batching))
            #expect(third.succeeded, "\(third)")
            #expect(try device.sync.operations().isEmpty)
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            #expect(rows["f"]?.text == "two")
            #expect(todos.lookup("f")?.text("text") == "two")
            await device.close()
        }
    }
}

/// The statuses a conflict handler saw.
final class ConflictLog: Sendable {
    private let seen = Mutex<[Int]>([])
    func add(_ status: Int) { seen.withLock { $0.append(status) } }
    var statuses: [Int] { seen.withLock { $0 } }
}
