import Flatland
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import Testing

/// A local write to a row while a page that carries the row is on its way: the page must not
/// overwrite it (the pull reads the page again, leaving the row with its queued operation), and
/// the write reaches the server with the next push.
@Suite("A local write while a page of its row is read")
struct PullRaceTests {
    enum LocalWrite: String, CaseIterable, Sendable {
        case update, delete
    }

    @Test(arguments: LocalWrite.allCases)
    func aLocalWriteWhileItsRowsPageIsOnTheWayIsKeptAndPushed(_ write: LocalWrite) async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "p", "text": "one"])
            try todos.insert(["id": "q", "text": "one"])
            #expect(await device.sync.push().succeeded)
            // The pull's page is held long enough for the local write to land before it commits.
            server.tableFaults.inject(.delay(.milliseconds(700)), method: "GET", pathPrefix: "/tables/todoitem")
            let before = server.testControls.requestCount("GET", "/tables/todoitem")
            let pull = Task { try await todos.pull() }
            try await server.testControls.waitForRequests("GET", "/tables/todoitem", count: before + 1)
            switch write {
            case .update: try todos.update(["id": "p", "text": "local"])
            case .delete: try todos.delete("p")
            }
            _ = try await pull.value
            // The page did not bring the server's copy back over the local write.
            switch write {
            case .update: #expect(todos.lookup("p")?.text("text") == "local")
            case .delete: #expect(todos.lookup("p") == nil)
            }
            #expect(todos.lookup("q")?.text("text") == "one")
            #expect(try device.sync.operations().map(\.itemID) == ["p"])
            #expect(await device.sync.push().succeeded)
            let rows = Dictionary(try await serverRows(port), uniquingKeysWith: { a, _ in a })
            switch write {
            case .update: #expect(rows["p"]?.text == "local")
            case .delete: #expect(rows["p"] == nil)
            }
            #expect(rows["q"]?.text == "one")
            await device.close()
        }
    }
}
