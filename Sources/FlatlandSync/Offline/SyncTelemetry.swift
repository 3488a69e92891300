import CoreMetrics
import FlatlandHTTP
import Logging

/// What a sync context logs and measures: a summary at the end of every push and pull, each
/// conflict, failed or uncertain operation a push leaves, and why a push stopped.
///
/// Logs go to ``TableOptions/logger``, or else the session's (`Backend.Configuration.logger`);
/// summaries at `debug`, what went wrong but is not thrown (a conflict nobody resolved, a failed
/// operation, a push that stopped with operations left attempted) at `info`. Metrics go to
/// ``TableOptions/metricsFactory``, or else the session's factory, or else the process's
/// `MetricsSystem`:
///
/// | label | kind | dimensions |
/// | --- | --- | --- |
/// | `flatland.sync.push.operations` | counter, per operation a push settled or left | `result` (`ok`, `resolved`, `conflict`, `error`) |
/// | `flatland.sync.push.aborted` | counter, per push that stopped early | — |
/// | `flatland.sync.push.duration` | timer, nanoseconds | — |
/// | `flatland.sync.operations.uncertain` | gauge: operations left attempted after a push (the server may or may not have applied them) | — |
/// | `flatland.sync.pull.pages`, `.rows`, `.deleted`, `.skipped` | counters | `table` |
/// | `flatland.sync.pull.duration` | timer, nanoseconds | `table` |
struct SyncTelemetry: Sendable {
    let logger: Logger
    let factory: any MetricsFactory
    let started = ContinuousClock.now

    init(options: TableOptions, session: Session) {
        let configuration = session.backend.configuration
        var logger = options.logger ?? configuration.logger
        logger[metadataKey: "flatland.environment"] = .string(session.environment.name)
        self.logger = logger
        factory = options.metricsFactory ?? configuration.metricsFactory ?? MetricsSystem.factory
    }

    private func record(_ label: String, _ dimensions: [(String, String)] = []) {
        let elapsed = ContinuousClock.now - started
        let (seconds, attoseconds) = elapsed.components
        Timer(label: label, dimensions: dimensions, factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The end of a push: its summary, and what it left to look at.
    func pushed(_ result: PushResult, context: SyncContext) {
        var counts: [PushOutcome.Result: Int] = [:]
        for outcome in result.outcomes {
            counts[outcome.result, default: 0] += 1
            guard outcome.result == .conflict || outcome.result == .error else { continue }
            logger.info(
                outcome.result == .conflict ? "operation in conflict" : "operation failed",
                metadata: [
                    "flatland.table": .string(outcome.table), "flatland.row": .string(outcome.id),
                    "flatland.operation": .string("\(outcome.sequence)"),
                    "flatland.kind": .string(outcome.kind.rawValue),
                    "http.status": outcome.status.map { .string(String($0)) } ?? "none",
                ])
        }
        var metadata: Logger.Metadata = ["flatland.sent": .string("\(result.outcomes.count)")]
        for (kind, count) in counts { metadata["flatland.\(kind.rawValue)"] = .string("\(count)") }
        if let reason = result.abortReason {
            // What stays uncertain: sent, with no answer that settled it.
            let attempted = (try? context.operations())?.filter { $0.state == .attempted }.count ?? 0
            metadata["flatland.attempted"] = .string("\(attempted)")
            metadata["flatland.reason"] = .string(reason)
            logger.info("push stopped", metadata: metadata)
            Counter(label: "flatland.sync.push.aborted", factory: factory).increment()
            Gauge(label: "flatland.sync.operations.uncertain", factory: factory).record(attempted)
        } else {
            logger.debug("push ended", metadata: metadata)
            Gauge(label: "flatland.sync.operations.uncertain", factory: factory).record(0)
        }
        for (kind, count) in counts {
            Counter(label: "flatland.sync.push.operations", dimensions: [("result", kind.rawValue)], factory: factory)
                .increment(by: count)
        }
        record("flatland.sync.push.duration")
    }

    /// The end of a pull: its summary.
    func pulled(_ result: PullResult) {
        logger.debug(
            "pull ended",
            metadata: [
                "flatland.table": .string(result.table), "flatland.pages": .string("\(result.pages)"),
                "flatland.rows": .string("\(result.rows)"), "flatland.deleted": .string("\(result.deleted)"),
                "flatland.skipped": .string("\(result.skipped)"),
                "flatland.token": result.token.map { .string($0) } ?? "none",
            ])
        let table = [("table", result.table)]
        for (name, value) in [
            ("pages", result.pages), ("rows", result.rows), ("deleted", result.deleted), ("skipped", result.skipped),
        ] where value > 0 {
            Counter(label: "flatland.sync.pull.\(name)", dimensions: table, factory: factory).increment(by: value)
        }
        record("flatland.sync.pull.duration", table)
    }
}

extension SyncContext {
    /// A telemetry for one push or pull, its clock started now.
    var telemetry: SyncTelemetry { SyncTelemetry(options: options, session: session) }
}
