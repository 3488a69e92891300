import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import Synchronization
import Testing

/// A write whose connection closes before any answer (a lost answer, or a kept-alive connection
/// the server had closed meanwhile) is sent again once, at once, when a second arrival cannot
/// apply it twice; otherwise the push stops with it attempted, as before. And every request of a
/// push has a deadline.
@Suite("Lost answers sent again at once, and the push's deadlines")
struct ResendTests {
    /// A device on a server that knows no idempotency keys (no `$capabilities`, keys stripped):
    /// only the write itself can make a second arrival harmless.
    func withKeylessServer(_ body: (SampleServer, Int, Device) async throws -> Void) async throws {
        try await withSyncServer { server, port in
            server.knobs.respond("/tables/$capabilities", status: 404, body: Array(#"{"error":"no"}"#.utf8))
            let device = try Device(port: port, filters: [withoutIdempotencyKeys, freshConnections])
            defer { device.remove() }
            try await body(server, port, device)
            await device.close()
        }
    }

    /// Seeds row `k0`, then makes one write by `method` (POST: inserts `k1` = "new"; PATCH:
    /// updates `k0` to "edited") whose answer the server loses, and whose check after the
    /// re-send (a read of the row) is lost too. Returns the row's id and the text written.
    func writeWithItsCheckLost(
        _ method: String, server: SampleServer, device: Device
    ) async throws -> (id: String, text: String) {
        let todos = device.sync.table("todoitem")
        try todos.insert(["id": "k0", "text": "seed"])
        #expect(await device.sync.push().succeeded)
        let (id, text) = method == "POST" ? ("k1", "new") : ("k0", "edited")
        if method == "POST" {
            try todos.insert(["id": .string(id), "text": .string(text)])
        } else {
            try todos.update(["id": .string(id), "text": .string(text)])
        }
        server.tableFaults.inject(.loseResponse, method: method, pathPrefix: "/tables/todoitem")
        server.tableFaults.inject(.loseResponse, method: "GET", pathPrefix: "/tables/todoitem/\(id)")
        return (id, text)
    }

    @Test(
        "an insert under the client's id, an update and a delete with If-Match whose connection drops unanswered are sent again at once and applied once",
        arguments: ["POST", "PATCH", "DELETE"])
    func aLostAnswerToAWriteThatCannotApplyTwiceIsSentAgainAtOnce(_ method: String) async throws {
        try await withKeylessServer { server, port, device in
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "k0", "text": "seed"])
            #expect(await device.sync.push().succeeded)
            switch method {
            case "POST": try todos.insert(["id": "k1", "text": "new"])
            case "PATCH": try todos.update(["id": "k0", "text": "edited"])
            default: try todos.delete("k0")
            }
            let path = method == "POST" ? "/tables/todoitem" : "/tables/todoitem/k0"
            let before = server.testControls.requestCount(method, path)
            // Applied, then the connection closes without a byte of answer.
            server.tableFaults.inject(.loseResponse, method: method, pathPrefix: "/tables/todoitem")
            let pushed = await device.sync.push()
            #expect(!pushed.aborted, "\(pushed.abortReason ?? "")")
            #expect(pushed.succeeded, "\(pushed.outcomes)")
            #expect(pushed.outcomes.map(\.result) == [.ok])
            // Sent twice; applied once (the second arrival met a 409 or a 412 of the first's
            // making, checked against the server's row, or a 404/410 for the delete).
            #expect(server.testControls.requestCount(method, path) - before == 2)
            #expect(try device.sync.operations().isEmpty)
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            switch method {
            case "POST":
                #expect(rows.count == 2)
                #expect(rows["k1"]?.text == "new")
            case "PATCH":
                #expect(rows.count == 1)
                #expect(rows["k0"]?.text == "edited")
                #expect(todos.lookup("k0")?.text("version") == rows["k0"]?.version)
            default:
                #expect(rows.isEmpty)
            }
        }
    }

    /// Sent again after a lost answer, an insert meets the 409 and an update the 412 of its own
    /// first arrival, and the read of the server's row that tells the two apart fails too. That
    /// is no conflict: the operation stays attempted, the push stops, and the next push (the
    /// read answered) settles it as applied, the handler never hearing of it. (A failed read
    /// once sent it to the handler as a conflict: server-wins reported a write refused that the
    /// server held, seed 169 of the simulation.)
    @Test(
        "a write sent again that meets its own 409 or 412 and cannot read the server's row stays attempted, never a conflict",
        arguments: ["POST", "PATCH"])
    func aResentWriteMeetingItsOwnRefusalUncheckedStaysAttempted(_ method: String) async throws {
        try await withKeylessServer { server, port, device in
            let todos = device.sync.table("todoitem")
            // The write is applied and its answer lost; sent again, it meets its own 409/412;
            // the read of the row that would prove it is lost too.
            let (id, text) = try await writeWithItsCheckLost(method, server: server, device: device)
            let conflicts = Mutex(0)
            let handler: ConflictHandler = { conflict in
                conflicts.withLock { $0 += 1 }
                return await ConflictPolicy.serverWins(conflict)
            }
            let pushed = await device.sync.push(onConflict: handler)
            #expect(conflicts.withLock { $0 } == 0, "\(pushed.outcomes)")
            #expect(pushed.aborted)
            #expect(pushed.outcomes.map(\.result) == [.error], "\(pushed.outcomes)")
            #expect(pushed.outcomes.first?.status == (method == "POST" ? 409 : 412))
            #expect(try device.sync.operations().map(\.state) == [.attempted])
            #expect(todos.lookup(id)?.text("text") == text)
            // The next push reads the row: the write is its own, settled, still no conflict.
            let next = await device.sync.push(onConflict: handler)
            #expect(conflicts.withLock { $0 } == 0, "\(next.outcomes)")
            #expect(next.succeeded, "\(next.abortReason ?? "") \(next.outcomes)")
            #expect(next.outcomes.map(\.result) == [.ok])
            #expect(try device.sync.operations().isEmpty)
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            #expect(rows[id]?.text == text)
            #expect(todos.lookup(id)?.text("version") == rows[id]?.version)
        }
    }

    /// As above, and the row is edited locally while its write is attempted: the edit is an
    /// operation of its own, behind. The next push sends the attempted write again as it was
    /// first sent (not the edited row), so its own 409 or 412 matches what it sent and settles
    /// it as applied; the edit follows as an update. (Sent with the edited row, it differed from
    /// the server's row and reached the handler as a conflict that was not one.)
    @Test(
        "a write sent again after a local edit carries what it first sent: its own 409 or 412 is no conflict, the edit follows",
        arguments: ["POST", "PATCH"])
    func aResentWriteAfterALocalEditCarriesWhatItFirstSent(_ method: String) async throws {
        try await withKeylessServer { server, port, device in
            let todos = device.sync.table("todoitem")
            let (id, _) = try await writeWithItsCheckLost(method, server: server, device: device)
            let conflicts = Mutex(0)
            let handler: ConflictHandler = { conflict in
                conflicts.withLock { $0 += 1 }
                return await ConflictPolicy.clientWins(conflict)
            }
            let pushed = await device.sync.push(onConflict: handler)
            #expect(pushed.aborted)
            #expect(try device.sync.operations().map(\.state) == [.attempted])
            // The local edit, made while the write is attempted: queued behind it.
            try todos.update(["id": .string(id), "text": "later"])
            #expect(try device.sync.operations().map(\.kind) == [method == "POST" ? .insert : .update, .update])
            let next = await device.sync.push(onConflict: handler)
            #expect(conflicts.withLock { $0 } == 0, "\(next.outcomes)")
            #expect(next.succeeded, "\(next.abortReason ?? "") \(next.outcomes)")
            #expect(next.outcomes.map(\.result) == [.ok, .ok], "\(next.outcomes)")
            #expect(try device.sync.operations().isEmpty)
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            #expect(rows[id]?.text == "later")
            #expect(todos.lookup(id)?.text("text") == "later")
            #expect(todos.lookup(id)?.text("version") == rows[id]?.version)
        }
    }

    /// An update whose answer was lost stays attempted (the read that would check its own 412
    /// is lost too); the row is then deleted locally, the delete queued behind it. The next push
    /// sends the update again as it was first sent: its own 412 settles it as applied, which
    /// gives the delete the server's version, and the delete goes through. (The update was
    /// dropped as moot, and the delete, sent with the version before the update's arrival, met a
    /// 412 of the device's own making: a conflict, and server-wins brought the row back; seed
    /// 531 of the simulation.)
    @Test(
        "an update maybe applied, its row deleted locally since, is sent again as it was: the delete behind it goes through"
    )
    func aMaybeAppliedUpdateOfARowDeletedSinceIsSentAgainAndTheDeleteGoesThrough() async throws {
        try await withKeylessServer { server, port, device in
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "k0", "text": "seed"])
            #expect(await device.sync.push().succeeded)
            try todos.update(["id": "k0", "text": "edited"])
            server.tableFaults.inject(.loseResponse, method: "PATCH", pathPrefix: "/tables/todoitem")
            server.tableFaults.inject(.loseResponse, method: "GET", pathPrefix: "/tables/todoitem/k0")
            let conflicts = Mutex(0)
            let handler: ConflictHandler = { conflict in
                conflicts.withLock { $0 += 1 }
                return await ConflictPolicy.serverWins(conflict)
            }
            #expect(await device.sync.push(onConflict: handler).aborted)
            try todos.delete("k0")
            #expect(try device.sync.operations().map(\.kind) == [.update, .delete])
            let next = await device.sync.push(onConflict: handler)
            #expect(conflicts.withLock { $0 } == 0, "\(next.outcomes)")
            #expect(next.succeeded, "\(next.abortReason ?? "") \(next.outcomes)")
            #expect(try device.sync.operations().isEmpty)
            #expect(todos.lookup("k0") == nil)
            #expect(try await serverRows(port).isEmpty)
        }
    }

    @Test("an insert whose server assigns the id and remembers keys is sent again at once: one row")
    func aLostInsertWithServerIDsAndKeysIsSentAgainAtOnce() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port, filters: [freshConnections])
            defer { device.remove() }
            let todos = device.sync.table("todoitem", serverAssignsIDs: true)
            let localID = try #require(try todos.insert(["text": "named by the server"]).text("id"))
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            let pushed = await device.sync.push()
            #expect(pushed.succeeded, "\(pushed.abortReason ?? "") \(pushed.outcomes)")
            #expect(server.testControls.requestCount("POST", "/tables/todoitem") == 2)
            let rows = try await serverRows(port)
            #expect(rows.count == 1)
            #expect(todos.resolve(localID) == rows.first?.0)
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }

    @Test("an insert whose server assigns the id and knows no keys is not sent again: the push stops, one row")
    func aLostInsertWithServerIDsAndNoKeysIsNotSentAgain() async throws {
        try await withKeylessServer { server, port, device in
            let todos = device.sync.table("todoitem", serverAssignsIDs: true)
            try todos.insert(["text": "maybe there"])
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            let pushed = await device.sync.push()
            #expect(pushed.aborted)
            #expect(server.testControls.requestCount("POST", "/tables/todoitem") == 1)
            #expect(try await serverRows(port).count == 1)
            #expect(try device.sync.operations().map(\.state) == [.attempted])
        }
    }

    @Test("a batch whose connection drops unanswered is sent again at once under its keys")
    func aLostBatchIsSentAgainAtOnce() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port, filters: [freshConnections])
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            for i in 0..<3 { try todos.insert(["id": .string("b\(i)"), "text": .string("row \(i)")]) }
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/$batch")
            let pushed = await device.sync.push()
            #expect(pushed.succeeded, "\(pushed.abortReason ?? "") \(pushed.outcomes)")
            #expect(pushed.outcomes.map(\.result) == [.ok, .ok, .ok])
            #expect(server.testControls.requestCount("POST", "/tables/$batch") == 2)
            #expect(try await serverRows(port).count == 3)
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }

    // MARK: Deadlines

    @Test(
        "a write the server does not answer ends the push at its deadline, attempted, nothing lost",
        .timeLimit(.minutes(1)))
    func aWriteWithoutAnAnswerEndsThePushAtItsDeadline() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "d0", "text": "seed"])
            #expect(await device.sync.push().succeeded)
            try todos.update(["id": "d0", "text": "late"])
            // The server holds the request far longer than the push's deadline.
            server.tableFaults.inject(.delay(.seconds(8)), method: "PATCH")
            let pushed = await device.sync.push(options: PushOptions(requestDeadline: 1))
            #expect(pushed.aborted)
            #expect(pushed.abortReason?.contains("deadline") == true, "\(pushed.abortReason ?? "")")
            #expect(pushed.outcomes.map(\.result) == [.error])
            // Sent once (not again at once: the server is slow, not gone); kept, attempted.
            // (At most once: on a loaded machine the deadline may pass before it is even sent.)
            #expect(server.testControls.requestCount("PATCH", "/tables/todoitem/d0") <= 1)
            let kept = try device.sync.operations().map(\.state)
            #expect(kept == [.attempted] || kept == [.pending], "\(kept)")
            #expect(todos.lookup("d0")?.text("text") == "late")
            // The next push settles it, whether the held request has landed by then or not.
            let next = await device.sync.push()
            #expect(next.succeeded, "\(next.abortReason ?? "") \(next.outcomes)")
            #expect(Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })["d0"]?.text == "late")
            await device.close()
        }
    }

    @Test(
        "a batch the server does not answer ends the push at its deadline, every operation attempted",
        .timeLimit(.minutes(1)))
    func aBatchWithoutAnAnswerEndsThePushAtItsDeadline() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            for i in 0..<3 { try todos.insert(["id": .string("e\(i)"), "text": .string("row \(i)")]) }
            server.tableFaults.inject(.delay(.seconds(8)), method: "POST", pathPrefix: "/tables/$batch")
            let pushed = await device.sync.push(options: PushOptions(requestDeadline: 1))
            #expect(pushed.aborted)
            #expect(pushed.abortReason?.contains("deadline") == true, "\(pushed.abortReason ?? "")")
            // At most one batch went (on a loaded machine the deadline may pass before it is even
            // sent), nothing was sent again, and every operation is kept, none settled or failed.
            #expect(server.testControls.requestCount("POST", "/tables/$batch") <= 1)
            let kept = try device.sync.operations().map(\.state)
            #expect(kept.count == 3 && kept.allSatisfy { $0 == .attempted || $0 == .pending }, "\(kept)")
            let next = await device.sync.push()
            #expect(next.succeeded, "\(next.abortReason ?? "") \(next.outcomes)")
            #expect(try await serverRows(port).count == 3)
            await device.close()
        }
    }

    @Test("a request deadline outside (0, a day] stops the push before it sends anything")
    func anInvalidDeadlineIsRefused() async throws {
        try await withSyncServer { _, port in
            let device = try Device(port: port)
            defer { device.remove() }
            try device.sync.table("todoitem").insert(["id": "z0", "text": "kept"])
            for deadline in [0, -1, 100_000] as [TimeInterval] {
                let pushed = await device.sync.push(options: PushOptions(requestDeadline: deadline))
                #expect(pushed.aborted && pushed.outcomes.isEmpty)
            }
            #expect(try device.sync.operations().map(\.state) == [.pending])
            await device.close()
        }
    }
}
