import FlatlandJSON
import Foundation
import Testing

@_spi(FlatlandInternal) @testable import Flatland

/// The date text a store persists and a table server sends: written byte by byte, it must be
/// exactly what the padded parts give, for every time, precision and suffix.
@Suite("ISO 8601 dates as written")
struct ISO8601FormatTests {
    /// The padded parts' text for `seconds` (the reference).
    private func reference(seconds: Int, fraction: Int, digits: Int, suffix: String) -> String {
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let (y, m, d) = ISO8601.civil(fromDays: days)
        return ISO8601.paddedFormat(
            y, m, d, seconds - days * 86400, fraction: fraction, digits: digits, suffix: suffix)
    }

    @Test func theFastTextIsThePaddedTextForEveryTimePrecisionAndSuffix() {
        var generator = SystemRandomNumberGenerator()
        // The edges of the fast path's years, the epoch, leap days, and random times.
        var times = [
            0, -1, 1, 86_399, 86_400, -86_400, 951_782_400, 1_709_164_800, 253_402_300_799, 253_402_300_800,
            -62_167_219_200, -62_167_219_201, 4_102_444_799,
        ]
        for _ in 0..<2000 { times.append(Int.random(in: -70_000_000_000...260_000_000_000, using: &generator)) }
        for seconds in times {
            for (digits, suffix) in [(0, "Z"), (3, "Z"), (6, "Z"), (7, "+00:00"), (9, "Z")] {
                var limit = 1
                for _ in 0..<digits { limit *= 10 }
                for fraction in [0, 1, limit - 1, Int.random(in: 0..<limit, using: &generator)] {
                    let fast = ISO8601.format(seconds: seconds, fraction: fraction, digits: digits, suffix: suffix)
                    let padded = reference(seconds: seconds, fraction: fraction, digits: digits, suffix: suffix)
                    #expect(fast == padded, "\(seconds) s, \(fraction) in \(digits) digits")
                    if fast != padded { return }
                }
            }
        }
    }

    /// A date with no calendar year (NaN, an infinity, past `Int`'s seconds) in JSON text, as
    /// a request body writes it: `null`, noted as unreadable, never a trap (it trapped converting
    /// the seconds to `Int`). Years past 9999 are still written, padded.
    @Test func aDateWithNoCalendarYearIsWrittenAsNullInJSONText() throws {
        for t in [Double.nan, .infinity, -.infinity, 1e300, -1e19] {
            var writer = JSONWriter()
            Date(timeIntervalSince1970: t).encode(to: &writer)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == "null", "\(t)")
            #expect(writer.unreadableValue != nil, "\(t)")
        }
        var writer = JSONWriter()
        Date(timeIntervalSince1970: 253_402_300_800).encode(to: &writer)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #""10000-01-01T00:00:00.000Z""#)
        #expect(writer.unreadableValue == nil)
    }

    @Test func aDateReadsBackFromItsText() throws {
        for text in ["2024-02-29T23:59:59.999Z", "1970-01-01T00:00:00.000Z", "2026-11-26T05:12:00.123456Z"] {
            var bytes = Array(text.utf8)
            let date = try #require(bytes.withUnsafeMutableBytes { ISO8601.parse(UnsafeRawBufferPointer($0)) })
            #expect(ISO8601.format(date) == text)
        }
    }
}
