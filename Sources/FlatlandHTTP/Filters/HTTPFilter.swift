import Foundation

/// What a filter passes the request on to: the next filter, or at the end the transport.
public typealias HTTPFilterNext = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// A step around every request, in order (what the Azure Mobile Services SDKs call a filter).
///
/// A filter may change the request, must call `next` (or answer itself), and may look at the
/// response on the way back. The first filter of the list is the outermost:
/// `[a, b]` runs `a` before, `b` before, the request, `b` after, `a` after.
///
/// ```swift
/// struct UserAgent: HTTPFilter {
///     func handle(_ request: HTTPRequest, next: HTTPFilterNext) async throws -> HTTPResponse {
///         var request = request
///         request.headers["User-Agent"] = "SeedSDK/1.0"
///         return try await next(request)
///     }
/// }
/// ```
public protocol HTTPFilter: Sendable {
    /// Handles one request.
    func handle(_ request: HTTPRequest, next: HTTPFilterNext) async throws -> HTTPResponse
}

/// A filter from a closure.
public struct ClosureFilter: HTTPFilter {
    let body: @Sendable (HTTPRequest, HTTPFilterNext) async throws -> HTTPResponse

    /// A filter that runs `body`.
    public init(_ body: @escaping @Sendable (HTTPRequest, HTTPFilterNext) async throws -> HTTPResponse) {
        self.body = body
    }

    public func handle(_ request: HTTPRequest, next: HTTPFilterNext) async throws -> HTTPResponse {
        try await body(request, next)
    }
}

/// Adds `Authorization: Bearer <token>` while the credentials hold a token.
public struct AuthenticationFilter: HTTPFilter {
    /// Where the token comes from.
    public let credentials: Credentials

    /// A filter reading `credentials`.
    public init(credentials: Credentials) { self.credentials = credentials }

    public func handle(_ request: HTTPRequest, next: HTTPFilterNext) async throws -> HTTPResponse {
        guard let token = credentials.token, request.headers["Authorization"] == nil else {
            return try await next(request)
        }
        var request = request
        request.headers["Authorization"] = "Bearer \(token)"
        return try await next(request)
    }
}

/// Adds a request id, `<task uuid>.<attempt>`, so server logs can be matched to tasks.
public struct RequestIDFilter: HTTPFilter {
    /// The header's name.
    public let header: String

    /// A filter setting `header` (default `X-Request-ID`).
    public init(header: String = "X-Request-ID") { self.header = header }

    public func handle(_ request: HTTPRequest, next: HTTPFilterNext) async throws -> HTTPResponse {
        var request = request
        request.headers[header] = "\(request.taskID).\(request.attempt)"
        return try await next(request)
    }
}

/// A session's token, shared by its filters; each session has its own.
public final class Credentials: Sendable {
    private let state = Locked<String?>(nil)

    /// Empty credentials.
    public init(token: String? = nil) { state.withLock { $0 = token } }

    /// The bearer token, if logged in.
    public var token: String? {
        get { state.current }
        set { state.withLock { $0 = newValue } }
    }

    /// Sets the token.
    public func set(_ token: String?) { state.withLock { $0 = token } }
}
