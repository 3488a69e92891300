import CoreMetrics
import Flatland
import FlatlandHTTP
import FlatlandJSON
import Logging

/// How a table talks to its server.
///
/// The protocol is chosen once: on the session, with
/// `Backend.Configuration.addTableHeaders(protocol:)` (which also sends the identity headers,
/// `X-ZUMO-INSTALLATION-ID`, `X-ZUMO-AUTH`…), or here, for one table. Headers, query style and
/// verbs all follow from that one choice; a table whose options name another protocol than its
/// session's is refused (``TableErrorCode/protocolMismatch``), never spoken half in one and half
/// in the other.
public struct TableOptions: Sendable, Hashable {
    /// The protocol spoken; nil (the default) for the session's (the protocol of its
    /// ``TableHeadersFilter``), or v2 (Azure Mobile Apps) when the session names none. A table's
    /// own ``Table/options`` has the protocol it speaks.
    public var protocolVersion: TableProtocol?
    /// How queries are spelled; nil for the protocol's default (``WireStyle/default(for:)``).
    public var style: WireStyle?
    /// v1 only: the system properties asked for with `__systemproperties` on every request to
    /// the table, reads and writes alike. Nil sends none (a v1 server then returns none).
    public var systemProperties: SystemProperties?
    /// Whether the server assigns row ids: an insert then sends no `id` (an untyped row's own
    /// `id`, if it has one, is still sent). Otherwise a row without an id gets a new one on the
    /// client (``TableRowID/generate()``).
    public var serverAssignsIDs: Bool
    /// Where a sync context logs its pushes and pulls (summaries at `debug`; conflicts, failed
    /// operations and a push that stopped at `info`); nil for the session's logger
    /// (`Backend.Configuration.logger`). Takes no part in equality.
    public var logger: Logger?
    /// Where a sync context's metrics go (labels `flatland.sync.…`); nil for the session's
    /// factory, or else the process's `MetricsSystem`. Takes no part in equality.
    public var metricsFactory: (any MetricsFactory)?

    /// Options; every argument has a default.
    public init(
        protocol version: TableProtocol? = nil, style: WireStyle? = nil, systemProperties: SystemProperties? = nil,
        serverAssignsIDs: Bool = false, logger: Logger? = nil, metricsFactory: (any MetricsFactory)? = nil
    ) {
        protocolVersion = version
        self.style = style
        self.systemProperties = systemProperties
        self.serverAssignsIDs = serverAssignsIDs
        self.logger = logger
        self.metricsFactory = metricsFactory
    }

    /// Whether two options make a table speak the same way (the logger and the metrics factory
    /// are not compared).
    public static func == (lhs: TableOptions, rhs: TableOptions) -> Bool {
        lhs.protocolVersion == rhs.protocolVersion && lhs.style == rhs.style
            && lhs.systemProperties == rhs.systemProperties && lhs.serverAssignsIDs == rhs.serverAssignsIDs
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(protocolVersion)
        hasher.combine(style)
        hasher.combine(systemProperties)
        hasher.combine(serverAssignsIDs)
    }
}

extension TableOptions {
    /// The protocol a table of these options speaks in `session`: the one named here, else the
    /// session's, else v2; a ``TableErrorCode/protocolMismatch`` when the two name different ones.
    func resolvedProtocol(in session: Session, table: String) -> Result<TableProtocol, TableError<JSONObject>> {
        let sessions = session.tableProtocol
        if let protocolVersion, let sessions, protocolVersion != sessions {
            return .failure(
                TableError(
                    code: .protocolMismatch,
                    message:
                        "the table's options say \(protocolVersion), its session's table headers \(sessions): choose the protocol once",
                    table: table))
        }
        return .success(protocolVersion ?? sessions ?? .v2)
    }
}

extension Session {
    /// The table protocol this session's requests speak: that of its first
    /// ``TableHeadersFilter`` (`Backend.Configuration.addTableHeaders(protocol:)`), or nil.
    public var tableProtocol: TableProtocol? {
        backend.configuration.filters.lazy.compactMap { $0 as? TableHeadersFilter }.first?.version
    }
}

extension Backend.Configuration {
    /// Adds a ``TableHeadersFilter`` for `version` to the filters: the headers the protocol's
    /// official clients send on every request. This chooses the session's protocol: its tables
    /// speak `version` unless their ``TableOptions`` name one (and then it must be the same).
    public mutating func addTableHeaders(
        protocol version: TableProtocol, appKey: String? = nil, installationID: String? = nil,
        authToken: String? = nil
    ) {
        filters.append(
            TableHeadersFilter(protocol: version, appKey: appKey, installationID: installationID, authToken: authToken))
    }
}
