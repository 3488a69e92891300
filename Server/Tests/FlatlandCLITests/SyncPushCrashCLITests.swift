import FlatlandJSON
import FlatlandSync
import Foundation
import Testing

@testable import FlatlandCLI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A push killed with SIGKILL in the middle, then run again: every queued row on the server
/// exactly once, nothing left queued.
@Suite("flatland sync: a push killed mid-way is finished by the next one, each row once")
struct SyncPushCrashCLITests {
    // More than three batches of the default size, so that the kill lands before the last one.
    static let rows = 1000

    @Test func aPushKilledMidWayLosesAndDuplicatesNothing() async throws {
        let server = try TableServer()
        let workspace = try Workspace()
        let device = SyncDevice(workspace: workspace, file: "phone.sqlite", url: server.url)
        let ids = (0..<SyncPushCrashCLITests.rows).map { String(format: "push%04d", $0) }

        // The queue, written offline through the store file (one process, not one per row).
        let store = try await OfflineStore.open(path: device.path, baseURL: nil, protocol: .v2)
        let todos = store.sync.table("todoitem")
        for (n, id) in ids.enumerated() { try todos.insert(["id": .string(id), "n": .integer(n)]) }
        await store.session.close()

        // A pull pushes the queue first and reports each operation on stderr: killed once a
        // few dozen are sent.
        let process = Process()
        process.executableURL = CLI.productsDirectory.appendingPathComponent("flatland")
        process.arguments = ["sync", "--store", device.path, "--url", server.url, "pull", "todoitem"]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var progress = ""
        while !progress.contains("push: 40/") {
            let data = err.fileHandleForReading.availableData
            if data.isEmpty { break }
            progress += String(decoding: data, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the push ended before it was killed: \(progress)")

        // Some of the queue is gone (sent), the rest is still there, the one in flight attempted.
        let left = try await device.lines(device.sync(["pending"]))
        #expect(left.count > 0 && left.count <= SyncPushCrashCLITests.rows - 40, "\(left.count) left")

        let pushed = try await device.lines(device.sync(["push"]))
        #expect(pushed.count == left.count)
        #expect(pushed.allSatisfy { $0["result"]?.stringValue == "ok" })
        #expect(try await device.lines(device.sync(["pending"])).isEmpty)

        // Another device reads the server: every row exactly once.
        let reader = SyncDevice(workspace: workspace, file: "reader.sqlite", url: server.url)
        // Pages of the server's v2 size (50): a larger $top gets 50 rows and a Link header, which
        // the v2 pull does not follow yet.
        let pulled = try await reader.one(reader.sync(["pull", "todoitem", "--page-size", "50"]))
        #expect(integer(pulled["rows"]) == SyncPushCrashCLITests.rows)
        let all = try await reader.lines(reader.local(["todoitem", "list"]))
        let seen = all.compactMap { $0["id"]?.stringValue }
        #expect(seen.count == SyncPushCrashCLITests.rows && Set(seen) == Set(ids))
    }
}
