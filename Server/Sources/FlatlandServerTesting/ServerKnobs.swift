import FlatlandServer
import NIOConcurrencyHelpers

/// Controls for tests: request counters, injected failures, slow and chunked bodies, held and
/// dropped responses. Each server has its own; nothing here is global.
///
/// Paths are matched exactly, without the query (`/devices`).
///
/// The per-path tables (request counts, last headers) are bounded: they keep at most
/// ``trackedPaths`` distinct paths (the first ones seen); requests to further paths are counted
/// only in ``totalRequests``. A client requesting ever new paths cannot grow them.
package final class ServerKnobs: RequestHook {
    struct Failure {
        var remaining: Int
        var status: Int
        var retryAfter: String?
        var body: [UInt8]
    }

    struct State {
        var failures: [String: Failure] = [:]
        var chunkSize: Int?
        var chunkPause: Duration = .zero
        var holds: [String: (afterBytes: Int, gate: Gate)] = [:]
        var drops: [String: Int] = [:]
        var overrides: [String: (status: Int, body: [UInt8])] = [:]
        var lastHeaders: [String: [String: String]] = [:]
    }

    let state = NIOLockedValueBox(State())

    /// The most distinct paths (and `method path` pairs) the per-path tables keep.
    package let trackedPaths: Int
    /// The server's own request counts.
    let log: RequestLog

    /// Knobs at rest: every request answered normally, at once. The per-path tables keep at
    /// most `trackedPaths` paths.
    init(log: RequestLog) {
        self.log = log
        trackedPaths = log.trackedPaths
    }

    /// How many entries the per-path tables hold now (the larger of the counts and the last
    /// headers): never more than ``trackedPaths``.
    package var trackedPathCount: Int { max(log.trackedCount, state.withLockedValue { $0.lastHeaders.count }) }

    /// Requests received for `method path` (`"GET", "/devices"`).
    package func requestCount(_ method: String = "GET", _ path: String) -> Int {
        log.count(method, path)
    }

    /// Requests received in all.
    package var totalRequests: Int { log.total }

    /// The header fields (lower-case names) of the last request to `path`.
    package func lastHeaders(_ path: String) -> [String: String] {
        state.withLockedValue { $0.lastHeaders[path] ?? [:] }
    }

    /// The next `times` requests to `path` fail with `status`, an error body and, if given, a
    /// `Retry-After` header; then requests succeed again.
    package func fail(_ path: String, times: Int, status: Int = 503, retryAfter: String? = nil) {
        let body = Array(#"{"error":{"code":\#(status),"message":"injected failure"}}"#.utf8)
        state.withLockedValue {
            $0.failures[path] = Failure(remaining: times, status: status, retryAfter: retryAfter, body: body)
        }
    }

    /// Every response body is written in chunks of `size` bytes (chunked transfer encoding),
    /// with `pause` between chunks; nil writes bodies whole.
    package func chunkBodies(size: Int?, pause: Duration = .zero) {
        state.withLockedValue {
            $0.chunkSize = size
            $0.chunkPause = pause
        }
    }

    /// Responses to `path` stop after `afterBytes` bytes of body (0: before the status line)
    /// until ``release(_:)``.
    package func hold(_ path: String, afterBytes: Int = 0) {
        state.withLockedValue { $0.holds[path] = (afterBytes, Gate()) }
    }

    /// Lets held responses to `path` go on; later ones are no longer held.
    package func release(_ path: String) {
        let gate = state.withLockedValue { $0.holds.removeValue(forKey: path)?.gate }
        gate?.open()
    }

    /// Lets every held response go on.
    package func releaseAll() {
        let gates = state.withLockedValue { s -> [Gate] in
            defer { s.holds = [:] }
            return s.holds.values.map(\.gate)
        }
        for gate in gates { gate.open() }
    }

    /// The next response to `path` sends `afterBytes` bytes of its body, then the connection is
    /// closed (a dropped connection).
    package func dropConnection(_ path: String, afterBytes: Int) {
        state.withLockedValue { $0.drops[path] = afterBytes }
    }

    /// Requests to `path` get this status and body (bytes as given, valid JSON or not).
    package func respond(_ path: String, status: Int, body: [UInt8]) {
        state.withLockedValue { $0.overrides[path] = (status, body) }
    }

    /// Waits until `count` requests for `method path` have arrived (polling, at most ~10 s).
    package func waitForRequests(_ method: String = "GET", _ path: String, count: Int) async throws {
        for _ in 0..<5000 {
            if requestCount(method, path) >= count { return }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw KnobError(message: "\(count) requests for \(method) \(path) never arrived")
    }

    /// Back to rest: no failures, holds (released), drops or overrides; counters kept.
    package func reset() {
        releaseAll()
        state.withLockedValue {
            $0.failures = [:]
            $0.drops = [:]
            $0.overrides = [:]
            $0.chunkSize = nil
            $0.chunkPause = .zero
        }
    }

    // MARK: Used by the server

    package func arrive(method: String, path: String, headers: [String: String]) -> RequestPlan {
        let limit = trackedPaths
        return state.withLockedValue { s in
            if s.lastHeaders[path] != nil || s.lastHeaders.count < limit { s.lastHeaders[path] = headers }
            var plan = RequestPlan()
            if var f = s.failures[path], f.remaining > 0 {
                f.remaining -= 1
                s.failures[path] = f
                plan.failure = (f.status, f.retryAfter, f.body)
            }
            plan.dropAfter = s.drops.removeValue(forKey: path)
            plan.override = s.overrides[path]
            plan.chunkSize = s.chunkSize
            plan.chunkPause = s.chunkPause
            if let hold = s.holds[path] {
                let gate = hold.gate
                plan.hold = (hold.afterBytes, { await gate.wait() })
            }
            return plan
        }
    }
}

/// A knob's wait that did not end.
package struct KnobError: Error, CustomStringConvertible {
    /// What did not happen.
    package var message: String
    package var description: String { message }
}

/// A one-shot gate: waiters resume when it opens.
final class Gate: Sendable {
    private let state = NIOLockedValueBox((open: false, waiters: [CheckedContinuation<Void, Never>]()))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLockedValue { s -> Bool in
                if s.open { return true }
                s.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLockedValue { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
