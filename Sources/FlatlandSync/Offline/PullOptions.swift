import Foundation

/// How a pull asks for its pages.
public struct PullOptions: Sendable, Hashable {
    /// How the pages are asked for.
    public enum Paging: Sendable, Hashable {
        /// By the key `(updatedAt, id)`, the default: the rows ordered by `updatedAt, id`, each
        /// request asking for those after the last one pulled, `(updatedAt gt T) or (updatedAt
        /// eq T and id gt 'I')`, or for a tick that may have grown since it was read from its
        /// first row, `updatedAt ge T`; `$top` the page size, until a request brings none. Safe
        /// when many rows share one `updatedAt`, when the server caps its pages, orders ties
        /// differently on every request, changes rows while the pull pages (in the tick it is
        /// reading, too), and on a resume. The article "Working offline" gives the rules.
        case key
        /// The official clients' query strings, byte for byte, for a server or a proxy that
        /// needs them: `updatedAt ge T` (`gt` in v3) ordered by `updatedAt` alone, re-paged
        /// with `$skip` in v1 and v2; v3 sends no `$top` and follows the server's next links.
        /// The official clients' failures come with them: rows that share the token's
        /// `updatedAt` may be missed (v3), and ties in another order on each request make
        /// `$skip` paging miss rows. Loops are still refused.
        case officialClients
    }

    /// How the pages are asked for; ``Paging/key`` by default.
    public var paging: Paging
    /// The rows asked for per request (`$top`). A server that caps its pages lower is followed
    /// through its links, and later requests ask for its cap.
    public var pageSize: Int
    /// The longest one page's request may take, from sending it to its body's last byte, in
    /// seconds: a server that trickles its answer is cut there (``SyncErrorCode/deadline``).
    /// The session's `Backend.Configuration.timeout` separately cuts a body that stops.
    public var requestDeadline: TimeInterval

    /// The default ``requestDeadline``: 120 seconds.
    public static let defaultRequestDeadline: TimeInterval = 120

    /// Options; every argument has a default.
    public init(
        paging: Paging = .key, pageSize: Int = 50, requestDeadline: TimeInterval = PullOptions.defaultRequestDeadline
    ) {
        self.paging = paging
        self.pageSize = pageSize
        self.requestDeadline = requestDeadline
    }
}
