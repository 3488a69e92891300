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

    /// The path and query of an absolute `url` of this environment (a next link, a `Location`),
    /// relative to ``baseURL`` as ``url(for:)`` takes it: `https://api.example.com/v1/users?page=2`
    /// in an environment at `https://api.example.com/v1` is `/users?page=2`.
    ///
    /// - Throws: ``HTTPError`` ``HTTPError/Code-swift.struct/outsideEnvironment`` when `url` has
    ///   another scheme, host or port (the default ports of http and https count as given), or a
    ///   path outside the base URL's; ``HTTPError/Code-swift.struct/invalidRequest`` when it is
    ///   not an absolute http(s) URL.
    public func pathAndQuery(ofAbsolute url: URL) throws(HTTPError) -> String {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host,
            !host.isEmpty, let parts = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else {
            throw HTTPError(.invalidRequest, "\(url.absoluteString) is not an absolute http(s) URL")
        }
        func origin(_ scheme: String, _ host: String, _ port: Int?) -> String {
            "\(scheme)://\(host.lowercased()):\(port ?? (scheme == "https" ? 443 : 80))"
        }
        let base = baseURL
        let own = origin(base.scheme?.lowercased() ?? "", base.host ?? "", base.port)
        let theirs = origin(scheme, host, url.port)
        guard own == theirs else {
            throw HTTPError(
                .outsideEnvironment,
                "\(url.absoluteString) is not on environment \(name)'s origin (\(own)); nothing was sent")
        }
        var basePath = URLComponents(url: base, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        while basePath.hasSuffix("/") { basePath.removeLast() }
        let path = parts.percentEncodedPath
        guard path == basePath || path.hasPrefix(basePath + "/") else {
            throw HTTPError(
                .outsideEnvironment,
                "\(url.absoluteString) is outside environment \(name)'s base path \(basePath)/; nothing was sent")
        }
        var relative = String(path.dropFirst(basePath.count))
        if relative.isEmpty { relative = "/" }
        if let query = parts.percentEncodedQuery { relative += "?" + query }
        return relative
    }

    public var description: String { "\(name) (\(baseURL.absoluteString))" }
}
