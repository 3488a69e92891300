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

/// The queue's tables carry a schema version; rows this version does not know are refused.
@Suite("The queue's schema: versioned, and rows it does not know refused, never sent")
struct QueueSchemaTests {
    // MARK: Finding 10: queue rows this version does not know

    @Test(arguments: [("kind", "upsert"), ("state", "parked")])
    func aQueueRowWithAnUnknownKindOrStateIsRefusedAndNeverSent(_ column: String, _ value: String) async throws {
        try await withSyncServer { server, port in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-unknown-\(UUID())")
                .path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var device = try Device(port: port, directory: directory)
            try device.sync.table("todoitem").insert(["id": "x", "text": "x"])
            await device.close()
            // A newer version of the library wrote this row.
            let file = try #require(
                try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".sqlite") })
            let queue = try DatabaseQueue(path: directory + "/" + file)
            try await queue.write { db in
                try db.execute(sql: "UPDATE flatland_sync_operations SET \(column) = ?", arguments: [value])
            }
            try queue.close()

            device = try Device(port: port, directory: directory)
            do throws(SyncError) {
                _ = try device.sync.operations()
                Issue.record("a queue row of kind or state '\(value)' was read")
            } catch {
                #expect(error.code == .unknownOperation)
                #expect(error.message.contains(value))
            }
            let pushed = await device.sync.push()
            #expect(pushed.aborted)
            #expect(pushed.abortReason?.contains(value) == true)
            #expect(server.testControls.requestCount("POST", "/tables/todoitem") == 0)
            #expect(server.testControls.requestCount("PATCH", "/tables/todoitem/x") == 0)
            #expect(try await serverRows(port).isEmpty)
            await device.close()
        }
    }

    @Test func aQueueWrittenByANewerSchemaIsRefusedWhole() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-schema-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var device = try Device(port: 1, directory: directory)
        try device.sync.table("todoitem").insert(["id": "x", "text": "x"])
        #expect(try device.sync.queueSchemaVersion() == SyncContext.queueSchemaVersion)
        await device.close()
        let file = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".sqlite") })
        let queue = try DatabaseQueue(path: directory + "/" + file)
        try await queue.write { db in
            try db.execute(
                sql: "UPDATE flatland_sync_schema SET version = ?", arguments: [SyncContext.queueSchemaVersion + 1])
        }
        try queue.close()
        do {
            device = try Device(port: 1, directory: directory)
            Issue.record("a queue of a newer schema was opened")
            await device.close()
        } catch let error as SyncError {
            #expect(error.code == .unsupportedSchema)
        }
    }
}
