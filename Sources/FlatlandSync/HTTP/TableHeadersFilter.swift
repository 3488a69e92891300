import FlatlandHTTP
import Foundation

/// Adds the headers a table protocol's official clients send, to every request of a session.
///
/// - v1: `X-ZUMO-APPLICATION` (the app key, when given), `X-ZUMO-VERSION`,
///   `X-ZUMO-INSTALLATION-ID`, `X-ZUMO-AUTH` (when a token is given).
/// - v2: `ZUMO-API-VERSION: 2.0.0`, `X-ZUMO-VERSION`, `X-ZUMO-INSTALLATION-ID`, `X-ZUMO-AUTH`.
/// - v3: `ZUMO-API-VERSION: 3.0.0`, and `X-ZUMO-AUTH` when a token is given.
///
/// A header the request already carries is left as it is, so a filter placed before this one
/// (or the launch's own headers) can replace any of them. Add it to a session's filters:
///
/// ```swift
/// var configuration = Backend.Configuration()
/// configuration.filters.append(TableHeadersFilter(protocol: .v2, installationID: storedID))
/// ```
public struct TableHeadersFilter: HTTPFilter {
    /// The protocol whose headers are sent.
    public var version: TableProtocol
    /// The app key of a v1 (Mobile Services) backend.
    public var appKey: String?
    /// This installation's stable id (``InstallationID``).
    public var installationID: String?
    /// The App Service authentication token, sent as `X-ZUMO-AUTH`.
    public var authToken: String?
    /// The `X-ZUMO-VERSION` value (the official clients send their user agent).
    public var clientVersion: String

    /// A filter for `version`.
    public init(
        protocol version: TableProtocol, appKey: String? = nil, installationID: String? = nil,
        authToken: String? = nil, clientVersion: String = TableHeadersFilter.defaultClientVersion
    ) {
        self.version = version
        self.appKey = appKey
        self.installationID = installationID
        self.authToken = authToken
        self.clientVersion = clientVersion
    }

    /// `ZUMO/2.0 (lang=Swift; os=…; version=…)`, in the official clients' form.
    public static let defaultClientVersion: String = {
        #if os(Linux)
            let os = "Linux"
        #elseif os(macOS)
            let os = "macOS"
        #elseif os(iOS)
            let os = "iOS"
        #else
            let os = "unknown"
        #endif
        return "ZUMO/2.0 (lang=Swift; os=\(os); version=Flatland)"
    }()

    /// The headers this filter adds, in order.
    public var headers: [(name: String, value: String)] {
        var out: [(String, String)] = []
        if let apiVersion = version.apiVersion { out.append(("ZUMO-API-VERSION", apiVersion)) }
        if version == .v1, let appKey { out.append(("X-ZUMO-APPLICATION", appKey)) }
        if version != .v3 {
            out.append(("X-ZUMO-VERSION", clientVersion))
            if let installationID { out.append(("X-ZUMO-INSTALLATION-ID", installationID)) }
        }
        if let authToken { out.append(("X-ZUMO-AUTH", authToken)) }
        return out
    }

    public func handle(_ request: HTTPRequest, next: HTTPFilterNext) async throws -> HTTPResponse {
        var request = request
        for (name, value) in headers where request.headers[name] == nil { request.headers[name] = value }
        return try await next(request)
    }
}

/// A stable id for one installation of an app, sent as `X-ZUMO-INSTALLATION-ID`.
///
/// Make one on first launch, store it (the app's settings), and pass it to every session.
public enum InstallationID {
    /// A new id: a random UUID in lower case.
    public static func make() -> String { UUID().uuidString.lowercased() }
}

/// Versions as they travel in `If-Match`, `If-None-Match` and `ETag`.
public enum TableVersionHeader {
    /// `"<version>"`, inner quotes escaped with a backslash, as the official clients write it.
    public static func quoted(_ version: String) -> String {
        "\"" + version.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The version an `ETag` carries: without `W/`, its quotes and their escapes.
    public static func version(fromETag tag: String) -> String {
        var text = Substring(tag.trimmingCharacters(in: .whitespaces))
        if text.hasPrefix("W/") { text = text.dropFirst(2) }
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = text.dropFirst().dropLast() }
        return text.replacingOccurrences(of: "\\\"", with: "\"")
    }
}
