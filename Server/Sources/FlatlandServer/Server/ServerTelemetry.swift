import CoreMetrics
import Logging

/// What the server logs and measures of every request it answers.
///
/// Logs go to ``SampleServer/Configuration/logger`` at `debug`, one line per request (method,
/// path, status, duration); a 5xx answer at `info`, since no client will tell. Metrics go to
/// ``SampleServer/Configuration/metricsFactory``, or the process's `MetricsSystem` when that is
/// nil:
///
/// | label | kind | dimensions |
/// | --- | --- | --- |
/// | `flatland.server.requests` | counter, one per answered request | `method`, `status`, `route` (`tables` or `api`) |
/// | `flatland.server.request.duration` | timer, nanoseconds | `method`, `route` |
struct ServerTelemetry: Sendable {
    let logger: Logger
    let factory: any MetricsFactory

    init(logger: Logger, factory: (any MetricsFactory)?) {
        self.logger = logger
        self.factory = factory ?? MetricsSystem.factory
    }

    func served(method: String, path: String, status: Int, since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        let route = TableHost.isTablePath(path) ? "tables" : "api"
        let metadata: Logger.Metadata = [
            "http.method": .string(method), "http.path": .string(path), "http.status": .string(String(status)),
            "flatland.duration": .string("\(elapsed)"),
        ]
        if status >= 500 {
            logger.info("request answered with a server error", metadata: metadata)
        } else {
            logger.debug("request answered", metadata: metadata)
        }
        Counter(
            label: "flatland.server.requests",
            dimensions: [("method", method), ("status", String(status)), ("route", route)], factory: factory
        ).increment()
        let (seconds, attoseconds) = elapsed.components
        Timer(
            label: "flatland.server.request.duration", dimensions: [("method", method), ("route", route)],
            factory: factory
        )
        .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
