import Foundation

/// A server to talk to: a name, a base URL, default headers.
///
/// HTTPS is required, except for loopback addresses (`127.0.0.0/8`, `localhost`, `::1`) or
/// with the explicit opt-in `allowInsecureHTTP`:
///
/// ```swift
/// let production = try Environment(name: "production", baseURL: URL(string: "https://api.example.com/v1")!)
/// let local = try Environment(name: "local", baseURL: URL(string: "http://127.0.0.1:8080")!)
/// ```
public struct Environment: Sendable, Hashable, CustomStringConvertible {
    /// A name for people and logs: "production", "development".
    public let name: String
    /// What every path is relative to.
    public let baseURL: URL
    /// Header fields sent with every request.
    public let headers: HTTPHeaders
    /// Whether plain `http://` is allowed to a host that is not a loopback address.
    public let allowsInsecureHTTP: Bool

    /// An environment.
    /// - Throws: ``HTTPError`` ``HTTPError/Code-swift.struct/insecure`` for `http://` to a host
    ///   that is not a loopback address (unless `allowInsecureHTTP`), and
    ///   ``HTTPError/Code-swift.struct/invalidRequest`` for any scheme other than http(s) or a
    ///   URL without a host.
    public init(name: String, baseURL: URL, headers: HTTPHeaders = [:], allowInsecureHTTP: Bool = false)
        throws(HTTPError)
    {
        guard let scheme = baseURL.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = baseURL.host, !host.isEmpty
        else {
            throw HTTPError(.invalidRequest, "environment \(name): \(baseURL) is not an http(s) URL with a host")
        }
        if scheme == "http" && !allowInsecureHTTP && !Environment.isLoopback(host: host) {
            throw HTTPError(
                .insecure,
                "environment \(name): \(baseURL) is plain http to a host that is not a loopback address; "
                    + "use https, or pass allowInsecureHTTP: true")
        }
        self.name = name
        self.baseURL = baseURL
        self.headers = headers
        self.allowsInsecureHTTP = allowInsecureHTTP
    }

    /// Whether `host` is a loopback address: `localhost`, `127.0.0.0/8` or `::1`.
    public static func isLoopback(host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host == "0:0:0:0:0:0:0:1" {
            return true
        }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in UInt8(part) != nil }
    }

    /// The absolute URL of `pathAndQuery` (`/devices?offset=0&count=20`) in this environment.
    public func url(for pathAndQuery: String) -> URL? {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let path = pathAndQuery.hasPrefix("/") ? pathAndQuery : "/" + pathAndQuery
        return URL(string: base + path)
    }

    public var description: String { "\(name) (\(baseURL.absoluteString))" }
}
