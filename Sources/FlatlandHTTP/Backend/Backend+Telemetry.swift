import CoreMetrics
import Logging

/// What a backend logs and measures, in one place: the task's start and end (status, bytes,
/// duration), its retries, and the GETs that joined one in flight.
///
/// Logs go to ``Backend/Configuration/logger``: a task's start at `trace`, its end at `debug`,
/// a retry at `info` (something went wrong that the caller does not see). Metrics go to
/// ``Backend/Configuration/metricsFactory``, or the process's `MetricsSystem` when that is nil:
///
/// | label | kind | dimensions |
/// | --- | --- | --- |
/// | `flatland.http.requests` | counter, one per finished task | `environment`, `method`, `status` (the code, or `none`), `outcome` (`success` or the ``HTTPError`` code) |
/// | `flatland.http.request.duration` | timer, nanoseconds | `environment`, `method` |
/// | `flatland.http.response.bytes` | counter, body bytes received | `environment`, `method` |
/// | `flatland.http.retries` | counter, one per retry | `environment`, `method` |
/// | `flatland.http.deduplicated` | counter, one per GET that joined a task in flight | `environment` |
struct BackendTelemetry: Sendable {
    let logger: Logger
    let factory: any MetricsFactory
    let environment: String

    init(configuration: Backend.Configuration, environment: String) {
        var logger = configuration.logger
        logger[metadataKey: "flatland.environment"] = .string(environment)
        self.logger = logger
        factory = configuration.metricsFactory ?? MetricsSystem.factory
        self.environment = environment
    }

    private func metadata(_ task: HTTPTask) -> Logger.Metadata {
        [
            "flatland.task": .string(task.id), "http.method": .string(task.request.method.rawValue),
            "http.endpoint": .string(task.request.endpoint),
        ]
    }

    func started(_ task: HTTPTask) {
        logger.trace("task started", metadata: metadata(task))
    }

    func ended(_ task: HTTPTask, _ outcome: Result<HTTPResult, HTTPError>) {
        let method = task.request.method.rawValue
        let status: Int?
        let code: String
        switch outcome {
        case .success(let result):
            status = result.status
            code = "success"
        case .failure(let error):
            status = error.status
            code = error.code.description
        }
        let bytes = task.bytesReceived
        let duration = task.duration
        var metadata = metadata(task)
        metadata["http.status"] = status.map { .string(String($0)) }
        metadata["flatland.outcome"] = .string(code)
        metadata["flatland.bytes"] = .string("\(bytes)")
        metadata["flatland.attempts"] = .string("\(task.attempts)")
        if let duration { metadata["flatland.duration"] = .string("\(duration)") }
        if case .failure(let error) = outcome { metadata["error"] = .string(error.message) }
        logger.debug("task ended", metadata: metadata)

        let dimensions = [("environment", environment), ("method", method)]
        Counter(
            label: "flatland.http.requests",
            dimensions: dimensions + [("status", status.map(String.init) ?? "none"), ("outcome", code)],
            factory: factory
        ).increment()
        if let duration {
            let (seconds, attoseconds) = duration.components
            let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            Timer(label: "flatland.http.request.duration", dimensions: dimensions, factory: factory)
                .recordNanoseconds(nanoseconds)
        }
        if bytes > 0 {
            Counter(label: "flatland.http.response.bytes", dimensions: dimensions, factory: factory)
                .increment(by: bytes)
        }
    }

    func retrying(_ task: HTTPTask, attempt: Int, after failure: HTTPError, delay: Duration) {
        var metadata = metadata(task)
        metadata["flatland.attempt"] = .string("\(attempt)")
        metadata["flatland.delay"] = .string("\(delay)")
        metadata["http.status"] = failure.status.map { .string(String($0)) }
        metadata["error"] = .string(failure.message)
        logger.info("retrying a failed request", metadata: metadata)
        Counter(
            label: "flatland.http.retries",
            dimensions: [("environment", environment), ("method", task.request.method.rawValue)], factory: factory
        ).increment()
    }

    func joined(_ task: HTTPTask) {
        logger.trace("joined a GET in flight", metadata: metadata(task))
        Counter(label: "flatland.http.deduplicated", dimensions: [("environment", environment)], factory: factory)
            .increment()
    }
}
