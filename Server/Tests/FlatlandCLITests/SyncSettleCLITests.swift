import FlatlandJSON
import Foundation
import Testing

/// `flatland sync push --on-conflict` on a row the server no longer has, and `flatland sync
/// cancel`: every failure can be settled from the command line.
@Suite("flatland sync: rows gone on the server are settled, and one operation can be cancelled")
struct SyncSettleCLITests {
    /// A row `g` pushed to a server, then edited offline; the server that answers the edit
    /// no longer has it (every request answered 404, as a server that deletes rows for good).
    func rowGoneOnTheServer() async throws -> (gone: TinyServer, device: SyncDevice) {
        let workspace = try Workspace()
        let created = try TinyServer(
            status: "201 Created",
            body: #"{"id":"g","text":"mine","version":"v1","updatedAt":"2026-01-01T00:00:00.000Z"}"#)
        defer { created.stop() }
        var device = SyncDevice(workspace: workspace, file: "a.sqlite", url: created.url)
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"g","text":"mine"}"#]))
        try await device.lines(device.sync(["push"]))
        try await device.lines(device.local(["todoitem", "update", #"{"id":"g","text":"edited"}"#]))
        let gone = try TinyServer(status: "404 Not Found", body: #"{"error":"no such row"}"#)
        device = SyncDevice(workspace: workspace, file: "a.sqlite", url: gone.url)
        return (gone, device)
    }

    @Test("an update answered 404: exit 3 without a rule, listed by errors; server-wins removes the row, exit 0")
    func serverWins() async throws {
        let (gone, a) = try await rowGoneOnTheServer()
        defer { gone.stop() }
        let failed = try await a.one(a.sync(["push"]), exit: 3)
        #expect(failed["result"] == "conflict")
        #expect(integer(failed["status"]) == 404)
        let errors = try await a.lines(a.sync(["errors"]))
        #expect(errors.count == 1 && errors.first?["state"] == "failed" && integer(errors.first?["status"]) == 404)
        let settled = try await a.one(a.sync(["push", "--on-conflict", "server-wins"]))
        #expect(settled["result"] == "resolved")
        #expect(try await a.lines(a.sync(["pending"])).isEmpty)
        #expect(try await a.local(["todoitem", "get", "g"]).status == 4)
    }

    @Test("cancel drops one operation (exit 0, its pending line), the local row stays; an unknown one exits 1")
    func cancel() async throws {
        let (gone, a) = try await rowGoneOnTheServer()
        defer { gone.stop() }
        try await a.lines(a.sync(["push"]), exit: 3)
        try await a.lines(a.local(["todoitem", "insert", #"{"id":"h","text":"h"}"#]))
        let pending = try await a.lines(a.sync(["pending"]))
        #expect(pending.map { $0["id"]?.stringValue } == ["g", "h"])
        #expect(pending.map { $0["state"]?.stringValue } == ["failed", "pending"])
        let sequence = try #require(integer(pending.first?["sequence"]))
        let dropped = try await a.one(a.sync(["cancel", "\(sequence)"]))
        #expect(dropped == pending.first)
        #expect(try await a.lines(a.sync(["pending"])).map { $0["id"]?.stringValue } == ["h"])
        // The local row stays as it is.
        #expect(try await a.one(a.local(["todoitem", "get", "g"]))["text"] == "edited")
        let again = try await a.sync(["cancel", "\(sequence)"])
        #expect(again.status == 1 && again.stderr.hasPrefix("error: "), "\(again.stderr)")
        #expect(try await a.sync(["cancel", "x"]).status == 2)
    }
}
