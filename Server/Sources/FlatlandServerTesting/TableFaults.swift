import FlatlandServer
import NIOConcurrencyHelpers

/// Faults injected into the table routes, for tests of clients that must survive them (lost
/// responses, failures, cut bodies, slow answers). Test-only: a server nobody injects into
/// behaves exactly as without it.
///
/// Each ``inject(_:method:pathPrefix:times:)`` queues a one-shot fault for the next `times`
/// table requests that match its method and path prefix; a request takes the first queued
/// fault it matches (in the order they were injected), and at most one. Nothing is random and
/// nothing depends on time but a delay.
///
/// ```swift
/// let server = SampleServer()
/// _ = try await server.start()
/// server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
/// // the next POST /tables/todoitem… inserts its row, and its connection closes unanswered
/// ```
package final class TableFaults: TableFaultHook {
    /// What happens to a request a fault matches.
    package typealias Fault = InjectedTableFault

    private struct Entry {
        var fault: Fault
        var method: String?
        var pathPrefix: String
        var remaining: Int
    }

    private let queue = NIOLockedValueBox<[Entry]>([])

    package init() {}

    /// Queues `fault` for the next `times` table requests whose method is `method` (any when
    /// nil; case-insensitive) and whose path (without the query) starts with `pathPrefix`.
    /// A `times` of 0 or less queues nothing. Only table routes (`/tables…`) take faults.
    package func inject(_ fault: Fault, method: String? = nil, pathPrefix: String = "/tables/", times: Int = 1) {
        guard times > 0 else { return }
        queue.withLockedValue {
            $0.append(Entry(fault: fault, method: method?.uppercased(), pathPrefix: pathPrefix, remaining: times))
        }
    }

    /// How many requests the queued faults will still match.
    package var pending: Int { queue.withLockedValue { $0.reduce(0) { $0 + $1.remaining } } }

    /// Drops every queued fault.
    package func reset() { queue.withLockedValue { $0 = [] } }

    /// The fault the request `method path` takes, if any (and it is used up once). With
    /// `naming`, only a fault whose prefix starts with it (a `$batch` request takes only the
    /// faults injected for `/tables/$…`; its operations take the others, each by its own path).
    package func take(method: String, path: String, naming: String? = nil) -> Fault? {
        queue.withLockedValue { entries in
            guard
                let index = entries.firstIndex(where: {
                    ($0.method == nil || $0.method == method.uppercased()) && path.hasPrefix($0.pathPrefix)
                        && (naming == nil || $0.pathPrefix.hasPrefix(naming!))
                })
            else { return nil }
            let fault = entries[index].fault
            entries[index].remaining -= 1
            if entries[index].remaining == 0 { entries.remove(at: index) }
            return fault
        }
    }
}
