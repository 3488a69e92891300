import CoreMetrics
import FlatlandHTTP
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import Testing

/// What a session's backend logs and measures, seen through swift-log's in-memory handler and
/// swift-metrics' test factory, injected through the session's configuration.
@Suite struct HTTPTelemetryTests {
    let logs = InMemoryLogHandler()
    let metrics = TestMetrics()
    let environment = try! Environment(name: "stub", baseURL: URL(string: "https://example.invalid")!)

    func session(_ transport: StubTransport, retryPolicy: RetryPolicy = .none) -> Session {
        var logger = Logger(label: "test", factory: { [logs] _ in logs })
        logger.logLevel = .trace
        return Session(
            user: "ada", environment: environment,
            configuration: Backend.Configuration(
                makeTransport: { transport }, retryPolicy: retryPolicy, logger: logger, metricsFactory: metrics))
    }

    func entries(_ message: String) -> [InMemoryLogHandler.Entry] {
        logs.entries.filter { $0.message.description == message }
    }

    @Test func aTaskLogsItsStartAndEndAndIsCounted() async throws {
        let body = #"{"uuid":"u-1","name":"Ada"}"#
        let session = session(StubTransport([.init(200, body)]))
        let task = session.launch(.get, "/users/u-1")
        _ = try await task.value

        let started = try #require(entries("task started").first)
        #expect(started.level == .trace)
        #expect(started.metadata["flatland.task"] == .string(task.id))
        #expect(started.metadata["http.endpoint"] == "/users/u-1")
        let ended = try #require(entries("task ended").first)
        #expect(ended.level == .debug)
        #expect(ended.metadata["http.status"] == "200")
        #expect(ended.metadata["flatland.outcome"] == "success")
        #expect(ended.metadata["flatland.bytes"] == .string(String(body.utf8.count)))
        #expect(ended.metadata["flatland.environment"] == "stub")

        let requests = try metrics.expectCounter(
            "flatland.http.requests",
            [("environment", "stub"), ("method", "GET"), ("status", "200"), ("outcome", "success")])
        #expect(requests.totalValue == 1)
        let bytes = try metrics.expectCounter(
            "flatland.http.response.bytes", [("environment", "stub"), ("method", "GET")])
        #expect(bytes.totalValue == Int64(body.utf8.count))
        let duration = try metrics.expectTimer(
            "flatland.http.request.duration", [("environment", "stub"), ("method", "GET")])
        #expect(duration.values.count == 1)
        #expect(duration.values.allSatisfy { $0 >= 0 })
    }

    @Test func aFailedTaskIsCountedWithItsStatusAndCode() async throws {
        let session = session(StubTransport([.init(404, #"{"error":"no such user"}"#)]))
        await #expect(throws: HTTPError.self) { try await session.launch(.get, "/users/u-9").value }

        let ended = try #require(entries("task ended").first)
        #expect(ended.metadata["http.status"] == "404")
        #expect(ended.metadata["flatland.outcome"] == "status")
        #expect(ended.metadata["error"] != nil)
        let requests = try metrics.expectCounter(
            "flatland.http.requests",
            [("environment", "stub"), ("method", "GET"), ("status", "404"), ("outcome", "status")])
        #expect(requests.totalValue == 1)
        #expect(metrics.counters(label: "flatland.http.retries").isEmpty)
    }

    @Test func retriesAreLoggedAndCounted() async throws {
        let transport = StubTransport([.init(503), .init(503), .init(200, "[]")])
        let session = session(
            transport, retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), honoursRetryAfter: false))
        _ = try await session.launch(.get, "/devices").value

        #expect(transport.sent.count == 3)
        let retries = entries("retrying a failed request")
        #expect(retries.count == 2)
        #expect(retries.allSatisfy { $0.level == .info && $0.metadata["http.status"] == "503" })
        #expect(retries.map { $0.metadata["flatland.attempt"] } == ["1", "2"])
        #expect(metrics.counterTotal(label: "flatland.http.retries") == 2)
        let ended = try #require(entries("task ended").first)
        #expect(ended.metadata["flatland.attempts"] == "3")
    }

    @Test func aJoinedGETIsCountedAsDeduplicated() async throws {
        let transport = StubTransport([.init(200, "[]")], holdFirst: true)
        let session = session(transport)
        let first = session.launch(.get, "/devices")
        let second = session.launch(.get, "/devices")
        #expect(first === second)
        while !transport.release() { try await Task.sleep(for: .milliseconds(1)) }
        _ = try await first.value

        #expect(transport.sent.count == 1)
        #expect(entries("joined a GET in flight").count == 1)
        #expect(metrics.counterTotal(label: "flatland.http.deduplicated") == 1)
        #expect(metrics.counterTotal(label: "flatland.http.requests") == 1)
    }

    @Test func theDefaultConfigurationLogsNothing() {
        let configuration = Backend.Configuration()
        #expect(configuration.logger.handler is SwiftLogNoOpLogHandler)
        #expect(configuration.metricsFactory == nil)
    }
}
