import Flatland
import FlatlandHTTP

/// How a table talks to its server.
///
/// The protocol's headers (`ZUMO-API-VERSION`, `X-ZUMO-*`) are not set here: they go through the
/// session's filters (``TableHeadersFilter``), where an app can add or replace one.
public struct TableOptions: Sendable, Hashable {
    /// The protocol spoken (v2, Azure Mobile Apps, by default).
    public var protocolVersion: TableProtocol
    /// How queries are spelled; nil for the protocol's default (``WireStyle/default(for:)``).
    public var style: WireStyle?
    /// v1 only: the system properties asked for with `__systemproperties` on every request to
    /// the table, reads and writes alike. Nil sends none (a v1 server then returns none).
    public var systemProperties: SystemProperties?
    /// Whether the server assigns row ids: an insert then sends no `id` (an untyped row's own
    /// `id`, if it has one, is still sent). Otherwise a row without an id gets a new one on the
    /// client (``TableRowID/generate()``).
    public var serverAssignsIDs: Bool

    /// Options; every argument has a default.
    public init(
        protocol version: TableProtocol = .v2, style: WireStyle? = nil, systemProperties: SystemProperties? = nil,
        serverAssignsIDs: Bool = false
    ) {
        protocolVersion = version
        self.style = style
        self.systemProperties = systemProperties
        self.serverAssignsIDs = serverAssignsIDs
    }
}

extension Backend.Configuration {
    /// Adds a ``TableHeadersFilter`` for `version` to the filters: the headers the protocol's
    /// official clients send on every request.
    public mutating func addTableHeaders(
        protocol version: TableProtocol, appKey: String? = nil, installationID: String? = nil,
        authToken: String? = nil
    ) {
        filters.append(
            TableHeadersFilter(protocol: version, appKey: appKey, installationID: installationID, authToken: authToken))
    }
}
