import FlatlandJSON
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A pull killed with SIGKILL in the middle, then run again: every server row exactly once.
@Suite("flatland sync: a pull killed mid-way resumes from its last whole page")
struct SyncCrashCLITests {
    static let rows = 300

    @Test func aPullKilledMidWayLosesAndDuplicatesNothing() async throws {
        let server = try TableServer()
        let workspace = try Workspace()
        try await SyncCrashCLITests.seed(server.url, rows: SyncCrashCLITests.rows)
        let device = SyncDevice(workspace: workspace, file: "phone.sqlite", url: server.url)

        // Small pages, so the pull is many commits long; killed once a few pages are in.
        let process = Process()
        process.executableURL = CLI.productsDirectory.appendingPathComponent("flatland")
        process.arguments = [
            "sync", "--store", device.path, "--url", server.url, "pull", "todoitem", "--query-id", "all",
            "--page-size", "2",
        ]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var progress = ""
        while !progress.contains("page 12,") {
            let data = err.fileHandleForReading.availableData
            if data.isEmpty { break }
            progress += String(decoding: data, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the pull ended before it was killed: \(progress)")

        // What the killed pull committed is whole pages: rows each once, a token that matches.
        let partial = try await device.lines(device.local(["todoitem", "list"]))
        #expect(partial.count >= 10 && partial.count < SyncCrashCLITests.rows, "\(partial.count) rows")
        #expect(Set(partial.compactMap { $0["id"]?.stringValue }).count == partial.count)

        let resumed = try await device.one(device.sync(["pull", "todoitem", "--query-id", "all"]))
        // Resumed from the token, not from the start.
        #expect((integer(resumed["rows"]) ?? 0) < SyncCrashCLITests.rows + 10 - partial.count + 10)
        let all = try await device.lines(device.local(["todoitem", "list"]))
        let ids = all.compactMap { $0["id"]?.stringValue }
        #expect(ids.count == SyncCrashCLITests.rows)
        #expect(Set(ids) == Set((0..<SyncCrashCLITests.rows).map { String(format: "row%04d", $0) }))
        #expect(all.allSatisfy { $0["n"] != nil })
        #expect(try await device.lines(device.sync(["pending"])).isEmpty)
    }

    /// Inserts `rows` rows `row0000…` through the table API, a few at a time.
    static func seed(_ url: String, rows: Int) async throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        for start in stride(from: 0, to: rows, by: 20) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in start..<min(start + 20, rows) {
                    group.addTask {
                        var request = URLRequest(url: URL(string: url + "/tables/todoitem")!)
                        request.httpMethod = "POST"
                        request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
                        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                        request.httpBody = Data(#"{"id":"\#(String(format: "row%04d", n))","n":\#(n)}"#.utf8)
                        let (_, response) = try await session.data(for: request)
                        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                        guard status == 201 else { throw TableTestFailure(message: "seeding answered \(status)") }
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}
