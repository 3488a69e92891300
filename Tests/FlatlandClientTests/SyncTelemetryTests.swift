import CoreMetrics
import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandSync
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import Testing

/// What a sync context logs and measures at the end of a push and a pull, against a stub table
/// server, with the logger and the metrics factory given in the context's options.
@Suite struct SyncTelemetryTests {
    let logs = InMemoryLogHandler()
    let metrics = TestMetrics()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-telemetry-\(UUID())").path

    static let serverRow =
        #"{"id":"r-1","text":"server","updatedAt":"2026-01-02T03:04:05.678Z","version":"AAAAAAAAB9E=","deleted":false}"#

    func context(_ transport: StubTransport, viaSession: Bool = false) throws -> SyncContext {
        var logger = Logger(label: "test", factory: { [logs] _ in logs })
        logger.logLevel = .trace
        let environment = try Environment(name: "stub", baseURL: URL(string: "https://example.invalid")!)
        var configuration = Backend.Configuration(makeTransport: { transport })
        configuration.addTableHeaders(protocol: .v2)
        if viaSession {
            configuration.logger = logger
            configuration.metricsFactory = metrics
        }
        let session = try Session(
            user: "ada", environment: environment,
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        let options =
            viaSession
            ? TableOptions(protocol: .v2) : TableOptions(protocol: .v2, logger: logger, metricsFactory: metrics)
        return try SyncContext(session: session, options: options)
    }

    func entries(_ message: String) -> [InMemoryLogHandler.Entry] {
        logs.entries.filter { $0.message.description == message }
    }

    @Test(arguments: [false, true])
    func aPushEndsWithASummaryAndItsConflictsAreLogged(viaSession: Bool) async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let transport = StubTransport { request in
            if request.endpoint.hasPrefix("/tables/$capabilities") { return .init(404, "{}") }
            // r-1 exists on the server already: its insert meets the server's row.
            if String(decoding: request.body ?? [], as: UTF8.self).contains("r-1") { return .init(409, Self.serverRow) }
            return .init(201, #"{"id":"r-2","text":"new","updatedAt":"2026-01-02T03:04:05.678Z","version":"AQ=="}"#)
        }
        let sync = try context(transport, viaSession: viaSession)
        let todos = sync.table("todoitem")
        _ = try todos.insert(["id": "r-2", "text": "new"])
        _ = try todos.insert(["id": "r-1", "text": "mine"])

        let pushed = await sync.push()
        #expect(pushed.outcomes.map(\.result) == [.ok, .conflict])

        let conflict = try #require(entries("operation in conflict").first)
        #expect(conflict.level == .info)
        #expect(conflict.metadata["flatland.row"] == "r-1")
        #expect(conflict.metadata["http.status"] == "409")
        let summary = try #require(entries("push ended").first)
        #expect(summary.level == .debug)
        #expect(summary.metadata["flatland.sent"] == "2")
        #expect(summary.metadata["flatland.ok"] == "1")
        #expect(summary.metadata["flatland.conflict"] == "1")
        #expect(try metrics.expectCounter("flatland.sync.push.operations", [("result", "ok")]).totalValue == 1)
        #expect(try metrics.expectCounter("flatland.sync.push.operations", [("result", "conflict")]).totalValue == 1)
        #expect(try metrics.expectTimer("flatland.sync.push.duration").values.count == 1)
        #expect(try metrics.expectGauge("flatland.sync.operations.uncertain").lastValue == 0)
    }

    @Test func aPushThatStopsSaysWhyAndHowManyAreUncertain() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Every request fails on the network: the operation sent stays, attempted.
        let transport = StubTransport { request in
            request.endpoint.hasPrefix("/tables/$capabilities") ? .init(404, "{}") : .init(-1)
        }
        let sync = try context(transport)
        _ = try sync.table("todoitem").insert(["id": "r-3", "text": "lost"])
        let pushed = await sync.push()
        #expect(pushed.aborted)

        let stopped = try #require(entries("push stopped").first)
        #expect(stopped.level == .info)
        #expect(stopped.metadata["flatland.reason"] != nil)
        #expect(stopped.metadata["flatland.attempted"] == "1")
        #expect(try metrics.expectCounter("flatland.sync.push.aborted").totalValue == 1)
        #expect(try metrics.expectGauge("flatland.sync.operations.uncertain").lastValue == 1)
    }

    @Test func aPullEndsWithASummary() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A legal server: the row, then nothing after the pull's key.
        let transport = StubTransport { request in
            request.endpoint.contains("id%20gt%20") ? .init(200, "[]") : .init(200, "[\(Self.serverRow)]")
        }
        let sync = try context(transport)
        let pulled = try await sync.table("todoitem").pull(queryID: "all")
        #expect(pulled.rows == 1)

        let summary = try #require(entries("pull ended").first)
        #expect(summary.level == .debug)
        #expect(summary.metadata["flatland.table"] == "todoitem")
        // Two pages: the row's, and the empty one that shows nothing follows the key.
        #expect(summary.metadata["flatland.pages"] == "2")
        #expect(summary.metadata["flatland.rows"] == "1")
        #expect(summary.metadata["flatland.token"] == "2026-01-02T03:04:05.678Z")
        #expect(try metrics.expectCounter("flatland.sync.pull.rows", [("table", "todoitem")]).totalValue == 1)
        #expect(try metrics.expectCounter("flatland.sync.pull.pages", [("table", "todoitem")]).totalValue == 2)
        #expect(try metrics.expectTimer("flatland.sync.pull.duration", [("table", "todoitem")]).values.count == 1)
    }
}
