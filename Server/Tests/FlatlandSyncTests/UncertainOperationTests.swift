import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import GRDB
import Testing

/// An insert whose answer was lost, against a server that assigns ids: sent again only when that
/// cannot duplicate it, otherwise held as uncertain until the app settles it.
@Suite("Uncertain operations: lost answers to inserts whose id the server assigns")
struct UncertainOperationTests {
    // MARK: Finding 5: a lost answer to an insert whose id the server assigns

    /// A device whose server assigns ids and knows no idempotency keys (no `$capabilities`).
    func withAzureLikeServer(_ body: (SampleServer, Int, Device, OfflineTable) async throws -> Void) async throws {
        try await withSyncServer { server, port in
            server.knobs.respond("/tables/$capabilities", status: 404, body: Array(#"{"error":"no"}"#.utf8))
            let device = try Device(port: port, filters: [withoutIdempotencyKeys, freshConnections])
            defer { device.remove() }
            let todos = device.sync.table("todoitem", serverAssignsIDs: true)
            try await body(server, port, device, todos)
            await device.close()
        }
    }

    @Test func aLostInsertAnswerWithServerAssignedIDsAndNoKeysIsHeldUncertainNotSentTwice() async throws {
        try await withAzureLikeServer { server, port, device, todos in
            let row = try todos.insert(["text": "only once"])
            let localID = try #require(row.text("id"))
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            #expect(await device.sync.push().aborted)
            #expect(try await serverRows(port).count == 1)
            let second = await device.sync.push()
            // Not sent again: it would be a second row. Held and reported.
            #expect(try await serverRows(port).count == 1)
            #expect(second.outcomes.map(\.result) == [.uncertain])
            #expect(!second.succeeded)
            let held = try device.sync.operations()
            #expect(held.map(\.state) == [.uncertain])
            #expect(try device.sync.failedOperations().map(\.sequence) == held.map(\.sequence))
            // Nothing lost locally.
            #expect(todos.lookup(localID)?.text("text") == "only once")
            // A third push still does not send it.
            _ = await device.sync.push()
            #expect(try await serverRows(port).count == 1)

            // Settled by looking it up by a field the app names: the server's row takes its place.
            let sequence = try #require(held.first?.sequence)
            let settled = try await device.sync.settle(sequence, .lookUp(matching: ["text"]))
            #expect(settled == .found)
            #expect(try device.sync.operations().isEmpty)
            let serverID = try #require(try await serverRows(port).first?.0)
            #expect(todos.lookup(localID)?.text("id") == serverID)
            #expect(await device.sync.push().succeeded)
            #expect(try await serverRows(port).count == 1)
        }
    }

    @Test func anUncertainInsertNotFoundOnTheServerIsSentAgainOnce() async throws {
        try await withAzureLikeServer { server, port, device, todos in
            let row = try todos.insert(["text": "never arrived"])
            let localID = try #require(row.text("id"))
            // The answer is lost; then the row goes from the server (another device deletes
            // it): to the client that is an insert that never arrived.
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            _ = await device.sync.push()
            let writer = try Device(port: port)
            defer { writer.remove() }
            let serverID = try #require(try await serverRows(port).first?.0)
            _ = try await writer.sync.table("todoitem").pull()
            try writer.sync.table("todoitem").delete(serverID)
            #expect(await writer.sync.push().succeeded)
            await writer.close()
            #expect(try await serverRows(port).isEmpty)

            _ = await device.sync.push()
            let sequence = try #require(try device.sync.operations().first?.sequence)
            #expect(try await device.sync.settle(sequence, .lookUp(matching: ["text"])) == .notFound)
            #expect(try device.sync.operations().map(\.state) == [.pending])
            #expect(await device.sync.push().succeeded)
            let rows = try await serverRows(port)
            #expect(rows.count == 1 && rows.first?.1.text == "never arrived")
            #expect(todos.lookup(localID)?.text("text") == "never arrived")
        }
    }

    @Test func anUncertainInsertCanBeDroppedOrResentByTheApp() async throws {
        try await withAzureLikeServer { server, port, device, todos in
            try todos.insert(["text": "a"])
            try todos.insert(["text": "b"])
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            #expect(await device.sync.push().aborted)
            // The first is held; the one behind it, of another row, goes.
            let second = await device.sync.push()
            #expect(second.outcomes.map(\.result) == [.uncertain, .ok])
            let held = try device.sync.operations()
            #expect(held.map(\.state) == [.uncertain])
            let dropped = try #require(held.first?.sequence)
            #expect(try await device.sync.settle(dropped, .drop) == .dropped)
            #expect(try device.sync.operations().isEmpty)
            // Dropped from the queue; the local row stays as it is.
            #expect(todos.rows().count == 2)
            #expect(await device.sync.push().succeeded)
            #expect(try await serverRows(port).compactMap(\.1.text).sorted() == ["a", "b"])

            // Sent again at the app's word: the server then holds it twice, as the app accepted.
            try todos.insert(["text": "c"])
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            #expect(await device.sync.push().aborted)
            #expect(await device.sync.push().outcomes.map(\.result) == [.uncertain])
            let resent = try #require(try device.sync.operations().first?.sequence)
            #expect(try await device.sync.settle(resent, .resend) == .queued)
            #expect(try device.sync.operations().map(\.state) == [.pending])
            #expect(await device.sync.push().succeeded)
            #expect(try await serverRows(port).filter { $0.1.text == "c" }.count == 2)
            do throws(SyncError) {
                try await device.sync.settle(resent, .drop)
                Issue.record("a settled operation was settled again")
            } catch {
                #expect(error.code == .notFound)
            }
        }
    }

    @Test func withIdempotencyKeysAdvertisedALostInsertIsSentAgainAndAppliedOnce() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port, filters: [freshConnections])
            defer { device.remove() }
            let todos = device.sync.table("todoitem", serverAssignsIDs: true)
            try todos.insert(["text": "keyed"])
            // Both the attempt and its immediate resend lose their answers: the push stops, and
            // the next one sends it again under its key.
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem", times: 2)
            #expect(await device.sync.push().aborted)
            #expect(await device.sync.push().succeeded)
            #expect(try await serverRows(port).count == 1)
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }

}
