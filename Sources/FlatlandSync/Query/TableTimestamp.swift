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
        guard let parsed = Self.parse(Array(text.utf8)) else {
            throw TableQueryError(code: .invalidDate, message: "'\(text)' is not an ISO 8601 date and time with a zone")
        }
        self = parsed
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
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        var out = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
        out += pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        switch format {
        case .dotNet:
            out += "." + pad(Int64(nanoseconds) / 100, 7) + "+00:00"
        case .milliseconds:
            out += "." + pad(Int64(nanoseconds) / 1_000_000, 3) + "Z"
        case .nanoseconds:
            var digits = pad(Int64(nanoseconds), 9)
            while digits.count > 3, digits.hasSuffix("0") { digits.removeLast() }
            out += "." + digits + "Z"
        }
        return out
    }

    private func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    // Days since 1970-01-01 to a proleptic Gregorian date, and back (H. Hinnant's algorithms).
    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func days(year y0: Int64, month m: Int64, day d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func parse(_ b: [UInt8]) -> TableTimestamp? {
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in i..<(i + n) {
                guard b[k] >= 0x30, b[k] <= 0x39 else { return nil }
                v = v * 10 + Int64(b[k] - 0x30)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2),
            i < b.count, b[i] == 0x54 || b[i] == 0x74
        else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else {
            return nil
        }
        var nanos: Int64 = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var count = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if count < 9 { nanos = nanos * 10 + Int64(b[i] - 0x30) }
                count += 1
                i += 1
            }
            guard count > 0 else { return nil }
            if count < 9 { for _ in count..<9 { nanos *= 10 } }
        }
        var offset: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            let sign: Int64 = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2), expect(0x3A), let om = digits(2), oh < 24, om < 60 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let total = days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return TableTimestamp(seconds: total, nanoseconds: Int32(nanos))
    }
}
