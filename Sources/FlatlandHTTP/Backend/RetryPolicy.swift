import Foundation

/// When and how often a failed request is tried again. Off by default: a phone without a
/// network must not burn its battery.
///
/// Only idempotent methods are retried (GET, HEAD, PUT, DELETE, OPTIONS), after a transport
/// failure or a retryable status (408, 429, 5xx but 501), with exponential backoff capped at
/// ``maxDelay``; a `Retry-After` header (seconds or an HTTP date) replaces the computed delay,
/// still capped.
///
/// ```swift
/// let policy = RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(200), maxDelay: .seconds(10))
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included: 1 means no retry.
    public var maxAttempts: Int
    /// The delay before the first retry.
    public var baseDelay: Duration
    /// Each further retry waits this many times longer.
    public var multiplier: Double
    /// No wait is ever longer, whatever the backoff or `Retry-After` say.
    public var maxDelay: Duration
    /// The statuses worth another try.
    public var retryableStatuses: Set<Int>
    /// Whether a `Retry-After` header sets the delay.
    public var honoursRetryAfter: Bool

    /// A policy.
    public init(
        maxAttempts: Int, baseDelay: Duration = .milliseconds(250), multiplier: Double = 2,
        maxDelay: Duration = .seconds(30), retryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504],
        honoursRetryAfter: Bool = true
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.retryableStatuses = retryableStatuses
        self.honoursRetryAfter = honoursRetryAfter
    }

    /// No retries: the default.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// Whether a request with `method` that failed on `attempt` (from 1) with `status` (nil for
    /// a transport failure) is tried again.
    public func shouldRetry(method: HTTPMethod, attempt: Int, status: Int?) -> Bool {
        guard method.isIdempotent, attempt < maxAttempts else { return false }
        guard let status else { return true }
        return retryableStatuses.contains(status)
    }

    /// The wait before attempt `attempt + 1`: `baseDelay × multiplier^(attempt-1)`, or the
    /// `Retry-After` value, capped at ``maxDelay``.
    public func delay(afterAttempt attempt: Int, retryAfter: String? = nil, now: Date = Date()) -> Duration {
        if honoursRetryAfter, let retryAfter, let seconds = Self.seconds(retryAfter: retryAfter, now: now) {
            return min(.milliseconds(Int64(max(0, seconds) * 1000)), maxDelay)
        }
        let factor = pow(multiplier, Double(max(0, attempt - 1)))
        let base = Double(baseDelay.components.seconds) + Double(baseDelay.components.attoseconds) / 1e18
        let seconds = min(base * factor, 1e9)
        return min(.milliseconds(Int64(seconds * 1000)), maxDelay)
    }

    /// A `Retry-After` value in seconds: delta-seconds, or an HTTP date relative to `now`.
    public static func seconds(retryAfter: String, now: Date = Date()) -> Double? {
        let text = retryAfter.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(text) { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return date.timeIntervalSince(now)
    }
}
