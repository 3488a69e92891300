import FlatlandJSON
import Foundation
import Testing

/// `--log-level`: the libraries' logs on stderr at that level, and nothing new without it.
@Suite("--log-level")
struct LogLevelCLITests {
    @Test("flatland table: debug logs each task's end on stderr; stdout is the same")
    func tableLogsAtDebug() throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: "v2")
        _ = try client.one(client.run(["insert", #"{"id":"r1","text":"logged"}"#]))

        let quiet = try client.run(["get", "r1"])
        #expect(quiet.status == 0)
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")

        let logged = try CLI.run([
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

        let warnings = try CLI.run(["table", "--url", server.url, "--log-level", "warning", "todoitem", "get", "r1"])
        #expect(warnings.status == 0)
        #expect(warnings.stderr.isEmpty, "\(warnings.stderr)")
    }

    @Test("an unknown level is a usage error")
    func unknownLevel() throws {
        let run = try CLI.run(["table", "--url", "http://127.0.0.1:1", "--log-level", "loud", "todoitem", "list"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("log-level"))
    }
}
