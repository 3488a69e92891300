import NIOConcurrencyHelpers

// The server's seams for its test controls (the FlatlandServerTesting product installs them; a
// server no test touched has none, and every request is served as it came). Nothing here
// injects anything by itself.

/// How one request is to be disturbed: all nil, it is served normally and at once.
package struct RequestPlan: Sendable {
    /// Answer with this status, `Retry-After` and body instead of serving the request.
    package var failure: (status: Int, retryAfter: String?, body: [UInt8])?
    /// Answer with this status and body (as given) instead of serving the request.
    package var override: (status: Int, body: [UInt8])?
    /// Write the body in chunks of this many bytes (chunked transfer encoding).
    package var chunkSize: Int?
    /// Pause this long between chunks.
    package var chunkPause: Duration = .zero
    /// Stop after `afterBytes` bytes of body (0: before the status line) until `wait` returns.
    package var hold: (afterBytes: Int, wait: @Sendable () async -> Void)?
    /// Close the connection after this many bytes of body.
    package var dropAfter: Int?

    package init() {}
}

/// Sees every request as it arrives and says how to disturb it.
package protocol RequestHook: Sendable {
    func arrive(method: String, path: String, headers: [String: String]) -> RequestPlan
    /// Lets every held response go on (the server is stopping).
    func releaseAll()
}

/// A fault injected into a table request.
package enum InjectedTableFault: Sendable, Hashable {
    /// Served (a write commits), then the connection closes without an answer.
    case loseResponse
    /// Answered with `status` (and `Retry-After`), the storage untouched.
    case fail(status: Int, retryAfter: String? = nil)
    /// Served, and the answer's body cut after `afterBytes` bytes (half when nil).
    case dropMidBody(afterBytes: Int? = nil)
    /// Served after waiting `duration`.
    case delay(Duration)
}

/// Says which fault, if any, a table request (or one operation of a `$batch`) takes.
package protocol TableFaultHook: Sendable {
    /// The fault the request `method path` takes, if any (used up once). With `naming`, only a
    /// fault whose path prefix starts with it.
    func take(method: String, path: String, naming: String?) -> InjectedTableFault?
}

/// The hooks installed in one server: none until a test installs them.
package final class ServerHooks: Sendable {
    private let state = NIOLockedValueBox<(request: (any RequestHook)?, table: (any TableFaultHook)?)>((nil, nil))

    package init() {}

    package var request: (any RequestHook)? { state.withLockedValue { $0.request } }
    package var table: (any TableFaultHook)? { state.withLockedValue { $0.table } }

    /// The request hook of type `H` installed, or the one `make` gives, installed now.
    package func request<H: RequestHook>(_ make: () -> H) -> H {
        state.withLockedValue { s in
            if let hook = s.request as? H { return hook }
            let hook = make()
            s.request = hook
            return hook
        }
    }

    /// The table fault hook of type `H` installed, or the one `make` gives, installed now.
    package func table<H: TableFaultHook>(_ make: () -> H) -> H {
        state.withLockedValue { s in
            if let hook = s.table as? H { return hook }
            let hook = make()
            s.table = hook
            return hook
        }
    }
}

/// Requests counted per `method path` (at most `trackedPaths` distinct ones; the rest only in
/// the total), so that a client requesting ever new paths cannot grow it.
package final class RequestLog: Sendable {
    private let state = NIOLockedValueBox<(counts: [String: Int], total: Int)>(([:], 0))
    /// The most distinct `method path` pairs counted one by one.
    package let trackedPaths: Int

    package init(trackedPaths: Int) { self.trackedPaths = max(0, trackedPaths) }

    func record(method: String, path: String) {
        let limit = trackedPaths
        state.withLockedValue { s in
            let key = "\(method) \(path)"
            if s.counts[key] != nil || s.counts.count < limit { s.counts[key, default: 0] += 1 }
            s.total += 1
        }
    }

    /// Requests received for `method path` (`"GET", "/devices"`).
    package func count(_ method: String, _ path: String) -> Int {
        state.withLockedValue { $0.counts["\(method) \(path)"] ?? 0 }
    }

    /// Requests received in all.
    package var total: Int { state.withLockedValue { $0.total } }

    /// Distinct `method path` pairs counted one by one now.
    package var trackedCount: Int { state.withLockedValue { $0.counts.count } }
}
