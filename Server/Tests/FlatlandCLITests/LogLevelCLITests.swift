import FlatlandJSON
import Foundation
import Testing

/// `--log-level`: the libraries' logs on stderr at that level, and nothing new without it.
@Suite("--log-level")
struct LogLevelCLITests {
    @Test("flatland table: debug logs each task's end on stderr; stdout is the same")
    func tableLogsAtDebug() async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: "v2")
        _ = try await client.one(client.run(["insert", #"{"id":"r1","text":"logged"}"#]))

        let quiet = try await client.run(["get", "r1"])
        #expect(quiet.status == 0)
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")

        let logged = try await CLI.run([
            "table", "--url", server.url, "--protocol", "v2", "--log-level", "debug", "todoitem", "get", "r1",
        ])
        #expect(logged.status == 0, "\(logged.stderr)")
        #expect(logged.stdout == quiet.stdout)
        let lines = logged.stderr.split(separator: "\n")
        let ended = try #require(lines.first { $0.contains("task ended") })
        #expect(ended.contains("debug"))
        #expect(ended.contains("http.status=200"))
        #expect(ended.contains("http.endpoint=/tables/todoitem/r1"))
        // trace (a task's start) is below debug.
        #expect(!logged.stderr.contains("task started"))

        let warnings = try await CLI.run([
            "table", "--url", server.url, "--log-level", "warning", "todoitem", "get", "r1",
        ])
        #expect(warnings.status == 0)
        #expect(warnings.stderr.isEmpty, "\(warnings.stderr)")
    }

    @Test("flatland sync: debug logs the push's summary on stderr, in the sync context's words")
    func syncLogsItsPushSummary() async throws {
        let workspace = try Workspace()
        let store = workspace.url.appendingPathComponent("device.sqlite").path
        // An empty queue: the push sends nothing, and says so.
        let quiet = try await CLI.run(["sync", "--store", store, "--url", "http://127.0.0.1:1", "push"])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")
        let logged = try await CLI.run([
            "sync", "--store", store, "--url", "http://127.0.0.1:1", "--log-level", "debug", "push",
        ])
        #expect(logged.status == 0, "\(logged.stderr)")
        #expect(logged.stdout == quiet.stdout)
        let summary = try #require(logged.stderr.split(separator: "\n").first { $0.contains("push ended") })
        #expect(summary.contains("flatland.sent=0"))
    }

    @Test("an unknown level is a usage error")
    func unknownLevel() async throws {
        let run = try await CLI.run(["table", "--url", "http://127.0.0.1:1", "--log-level", "loud", "todoitem", "list"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("log-level"))
    }
}
