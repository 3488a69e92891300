import FlatlandServer
import FlatlandServerTesting
import InMemoryLogging
import Logging
import MetricsTestKit
import Testing

/// Every answered request is logged and counted, through the logger and the metrics factory
/// given in the server's configuration.
@Suite struct ServerTelemetryTests {
    @Test func everyRequestIsLoggedAndCountedWithItsStatus() async throws {
        let logs = InMemoryLogHandler()
        let metrics = TestMetrics()
        var logger = Logger(label: "test", factory: { _ in logs })
        logger.logLevel = .trace
        let configuration = SampleServer.Configuration(
            population: .init(users: 2, sessions: 1), logger: logger, metricsFactory: metrics)
        try await withServer(configuration) { server, port in
            _ = try await request(port: port, "GET", "/tables/todoitem", headers: ["ZUMO-API-VERSION": "2.0.0"])
            _ = try await request(port: port, "GET", "/no/such/route")
            server.testControls.fail("/devices", times: 1, status: 503)
            _ = try await request(port: port, "GET", "/devices")
        }
        let answered = logs.entries.filter { $0.message.description == "request answered" }
        #expect(
            answered.contains { $0.metadata["http.path"] == "/tables/todoitem" && $0.metadata["http.status"] == "200" })
        #expect(
            answered.contains { $0.metadata["http.path"] == "/no/such/route" && $0.metadata["http.status"] == "404" })
        let failed = try #require(
            logs.entries.first { $0.message.description == "request answered with a server error" })
        #expect(failed.level == .info)
        #expect(failed.metadata["http.status"] == "503")

        #expect(
            try metrics.expectCounter(
                "flatland.server.requests", [("method", "GET"), ("status", "200"), ("route", "tables")]
            ).totalValue == 1)
        #expect(
            try metrics.expectCounter(
                "flatland.server.requests", [("method", "GET"), ("status", "503"), ("route", "api")]
            ).totalValue == 1)
        #expect(
            try metrics.expectTimer("flatland.server.request.duration", [("method", "GET"), ("route", "tables")])
                .values.count == 1)
    }
}
