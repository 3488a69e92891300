#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// ISO 8601 / RFC 3339 date-times, `2024-03-01T12:34:56.789Z` or with an offset, parsed and
/// formatted without a formatter object (and without allocating) on the ingest path.
///
/// Flatland's own (SPI `FlatlandInternal`, for its server and benchmarks; not an app's API): the
/// table client and server keep `updatedAt` at full precision with
/// ``instant(_:requiresZone:)`` and ``format(seconds:fraction:digits:suffix:)``.
@_spi(FlatlandInternal) public enum ISO8601 {
    /// Days from 1970-01-01 to the civil date (proleptic Gregorian).
    package static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    package static func civil(fromDays z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func parse(_ s: UnsafeRawBufferPointer) -> Date? {
        guard let t = instant(s) else { return nil }
        return Date(timeIntervalSince1970: Double(t.seconds) + Double(t.nanoseconds) / 1_000_000_000)
    }

    /// The instant `s` names, as whole seconds since 1970-01-01T00:00:00Z and nanoseconds past
    /// them (digits past the ninth are dropped, never rounded up). Without `requiresZone`, a
    /// time with no zone is read as UTC.
    @inline(__always)
    public static func instant(_ s: UnsafeRawBufferPointer, requiresZone: Bool = true) -> (
        seconds: Int, nanoseconds: Int
    )? {
        let n = s.count
        var i = 0
        func digits(_ count: Int) -> Int? {
            guard i + count <= n else { return nil }
            var v = 0
            for _ in 0..<count {
                let d = s[i] &- 48
                guard d < 10 else { return nil }
                v = v * 10 + Int(d)
                i += 1
            }
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < n, s[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
            let day = digits(2), month >= 1, month <= 12, day >= 1, day <= 31
        else { return nil }
        guard i < n, s[i] | 0x20 == UInt8(ascii: "t") || s[i] == UInt8(ascii: " ") else { return nil }
        i += 1
        guard let hour = digits(2), expect(UInt8(ascii: ":")), let minute = digits(2), expect(UInt8(ascii: ":")),
            let second = digits(2), hour < 24, minute < 60, second <= 60
        else { return nil }
        var nanoseconds = 0
        if i < n, s[i] == UInt8(ascii: ".") {
            i += 1
            var count = 0
            while i < n, s[i] &- 48 < 10 {
                if count < 9 { nanoseconds = nanoseconds * 10 + Int(s[i] &- 48) }
                count += 1
                i += 1
            }
            guard count > 0 else { return nil }
            var scale = count
            while scale < 9 {
                nanoseconds *= 10
                scale += 1
            }
        }
        var offset = 0
        if i == n, !requiresZone {
            // A local time with no zone, read as UTC.
        } else if i < n, s[i] | 0x20 == UInt8(ascii: "z") {
            i += 1
        } else if i < n, s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
            let sign = s[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(UInt8(ascii: ":"))
            guard let om = digits(2) else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == n else { return nil }
        let days = daysFromCivil(year, month, day)
        return (days * 86400 + hour * 3600 + minute * 60 + second - offset, nanoseconds)
    }

    /// `YYYY-MM-DDTHH:MM:SS.sss[sss]Z` in UTC: milliseconds, or microseconds when needed to
    /// read back the same `Date`.
    static func format(_ date: Date) -> String {
        let t = date.timeIntervalSince1970
        var seconds = Int(t.rounded(.down))
        var micros = Int(((t - Double(seconds)) * 1_000_000).rounded())
        if micros >= 1_000_000 {
            seconds += 1
            micros -= 1_000_000
        }
        return micros % 1000 == 0
            ? format(seconds: seconds, fraction: micros / 1000, digits: 3, suffix: "Z")
            : format(seconds: seconds, fraction: micros, digits: 6, suffix: "Z")
    }

    /// `YYYY-MM-DDTHH:MM:SS.fff…` for `seconds` since the epoch in UTC, then `fraction` written
    /// in `digits` digits (none when 0), then `suffix` (`Z`, `+00:00`).
    ///
    /// Every record a store persists and every row a table server sends writes its dates here:
    /// the text is written byte by byte into one string, with no string made per part.
    public static func format(seconds: Int, fraction: Int, digits: Int, suffix: String) -> String {
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secondOfDay = seconds - days * 86400
        let (y, m, d) = civil(fromDays: days)
        var limit = 1
        for _ in 0..<min(max(digits, 0), 18) { limit *= 10 }
        guard (0...9999).contains(y), (0...18).contains(digits), fraction >= 0, fraction < limit else {
            return paddedFormat(y, m, d, secondOfDay, fraction: fraction, digits: digits, suffix: suffix)
        }
        let count = 19 + (digits > 0 ? 1 + digits : 0) + suffix.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            var i = 0
            func put(_ value: Int, _ width: Int) {
                var v = value
                var j = i + width - 1
                while j >= i {
                    buffer[j] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
                    v /= 10
                    j -= 1
                }
                i += width
            }
            func put(byte: UInt8) {
                buffer[i] = byte
                i += 1
            }
            put(y, 4)
            put(byte: 0x2D)
            put(m, 2)
            put(byte: 0x2D)
            put(d, 2)
            put(byte: 0x54)
            put(secondOfDay / 3600, 2)
            put(byte: 0x3A)
            put(secondOfDay / 60 % 60, 2)
            put(byte: 0x3A)
            put(secondOfDay % 60, 2)
            if digits > 0 {
                put(byte: 0x2E)
                put(fraction, digits)
            }
            for byte in suffix.utf8 { put(byte: byte) }
            return i
        }
    }

    /// The same text made of padded parts: any year (before 0 or after 9999), and the reference
    /// the fast path is tested against.
    package static func paddedFormat(
        _ y: Int, _ m: Int, _ d: Int, _ secondOfDay: Int, fraction: Int, digits: Int, suffix: String
    ) -> String {
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return s.count >= w ? s : String(repeating: "0", count: w - s.count) + s
        }
        var text =
            "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        if digits > 0 { text += "." + pad(fraction, digits) }
        return text + suffix
    }
}
