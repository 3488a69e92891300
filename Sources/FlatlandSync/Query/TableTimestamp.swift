@_spi(FlatlandInternal) import Flatland
import Foundation

/// A point in time as a table server wrote it, kept at the server's full precision.
///
/// Servers write `updatedAt` with up to seven fractional digits (`DATETIMEOFFSET(7)`), more
/// than `Date` holds exactly. Incremental pulls filter on the largest `updatedAt` seen, so the
/// value is kept as whole seconds and nanoseconds, and ``text`` keeps the server's own string.
///
/// ```swift
/// let t = try TableTimestamp(parsing: "2024-08-23T20:22:54.2913456Z")
/// t.formatted(.dotNet)        // "2024-08-23T20:22:54.2913456+00:00"
/// t.formatted(.milliseconds)  // "2024-08-23T20:22:54.291Z"
/// ```
public struct TableTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    public var seconds: Int64
    /// Nanoseconds past ``seconds`` (0 to 999,999,999).
    public var nanoseconds: Int32
    /// The text this timestamp was parsed from, if it was.
    public var text: String?

    /// 1970-01-01T00:00:00Z, the delta token of a table never pulled.
    public static let epoch = TableTimestamp(seconds: 0, nanoseconds: 0)

    /// A timestamp from its parts.
    public init(seconds: Int64, nanoseconds: Int32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        text = nil
    }

    /// A timestamp from a `Date` (to the microsecond, as a `Double` holds it).
    public init(_ date: Date) {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded(.down)
        let whole = Int64((micros / 1_000_000).rounded(.down))
        seconds = whole
        nanoseconds = Int32((Int64(micros) - whole * 1_000_000) * 1000)
        text = nil
    }

    /// The same instant as a `Date` (precision beyond the microsecond is lost).
    public var date: Date { Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9) }

    /// Parses an ISO 8601 date and time with a time zone, as table servers write them:
    /// `2024-08-23T20:22:54.291Z`, `2024-08-23T20:22:54.2910000+00:00`, `…54.291-05:00`; up to
    /// nine fractional digits, or none.
    ///
    /// - Throws: ``TableQueryError`` with code ``TableQueryError/Code/invalidDate``.
    public init(parsing text: String) throws(TableQueryError) {
        var bytes = text
        let instant = bytes.withUTF8 { ISO8601.instant(UnsafeRawBufferPointer($0)) }
        guard let instant else {
            throw TableQueryError(code: .invalidDate, message: "'\(text)' is not an ISO 8601 date and time with a zone")
        }
        seconds = Int64(instant.seconds)
        nanoseconds = Int32(instant.nanoseconds)
        self.text = text
    }

    public static func < (a: TableTimestamp, b: TableTimestamp) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }

    public static func == (a: TableTimestamp, b: TableTimestamp) -> Bool {
        a.seconds == b.seconds && a.nanoseconds == b.nanoseconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(seconds)
        hasher.combine(nanoseconds)
    }

    public var description: String { text ?? formatted(.nanoseconds) }

    /// How a timestamp is written.
    public enum Format: Sendable, Hashable {
        /// `1970-01-01T00:00:00.0000000+00:00`: seven digits and an offset, as .NET's
        /// `DateTimeOffset.ToString("o")` writes it (the .NET clients' filters and tokens).
        case dotNet
        /// `1970-01-01T00:00:00.000Z`: milliseconds, truncated, in UTC (the iOS clients and
        /// Datasync).
        case milliseconds
        /// `1970-01-01T00:00:00.000000000Z`, every digit kept, trailing zeros dropped (at least
        /// three).
        case nanoseconds
    }

    /// This instant in UTC, written in `format`.
    public func formatted(_ format: Format) -> String {
        let whole = Int(seconds)
        let nanos = Int(nanoseconds)
        switch format {
        case .dotNet:
            return ISO8601.format(seconds: whole, fraction: nanos / 100, digits: 7, suffix: "+00:00")
        case .milliseconds:
            return ISO8601.format(seconds: whole, fraction: nanos / 1_000_000, digits: 3, suffix: "Z")
        case .nanoseconds:
            var fraction = nanos
            var digits = 9
            while digits > 3, fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
            return ISO8601.format(seconds: whole, fraction: fraction, digits: digits, suffix: "Z")
        }
    }
}
