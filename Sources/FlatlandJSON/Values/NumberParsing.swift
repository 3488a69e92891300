#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Exact conversions of JSON number text. Shared by ``JSONNumberText`` (transient) and
/// ``JSONNumber`` (owned) so that both convert the same way.
enum NumberParsing {
    /// The parts of a JSON number: `-? int (. frac)? ([eE] [+-]? exp)?`.
    struct Parts {
        var negative = false
        /// Range of the integer digits.
        var intStart = 0
        var intEnd = 0
        /// Range of the fraction digits (empty when there is none).
        var fracStart = 0
        var fracEnd = 0
        /// The exponent, saturated to ±Int32.max.
        var exponent = 0
        var hasFractionOrExponent = false
    }

    /// Splits `text` into its parts, or returns nil when it is not a JSON number.
    static func split(_ text: UnsafeRawBufferPointer) -> Parts? {
        var p = Parts()
        let n = text.count
        var i = 0
        if i < n, text[i] == UInt8(ascii: "-") {
            p.negative = true
            i += 1
        }
        p.intStart = i
        guard i < n, isDigit(text[i]) else { return nil }
        if text[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            while i < n, isDigit(text[i]) { i += 1 }
        }
        p.intEnd = i
        p.fracStart = i
        p.fracEnd = i
        if i < n, text[i] == UInt8(ascii: ".") {
            i += 1
            p.fracStart = i
            while i < n, isDigit(text[i]) { i += 1 }
            p.fracEnd = i
            guard p.fracEnd > p.fracStart else { return nil }
            p.hasFractionOrExponent = true
        }
        if i < n, text[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            p.hasFractionOrExponent = true
            var expNegative = false
            if i < n, text[i] == UInt8(ascii: "+") || text[i] == UInt8(ascii: "-") {
                expNegative = text[i] == UInt8(ascii: "-")
                i += 1
            }
            guard i < n, isDigit(text[i]) else { return nil }
            var e = 0
            while i < n, isDigit(text[i]) {
                if e < Int(Int32.max) { e = min(e * 10 + Int(text[i] &- 48), Int(Int32.max)) }
                i += 1
            }
            p.exponent = expNegative ? -e : e
        }
        return i == n ? p : nil
    }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b &- 48 < 10 }

    static func describe(_ text: UnsafeRawBufferPointer) -> String {
        let s = String(decoding: text, as: UTF8.self)
        return s.count > 40 ? String(s.prefix(37)) + "..." : s
    }

    /// The magnitude of an integral number, or an error naming the target type.
    static func magnitude(_ text: UnsafeRawBufferPointer, _ p: Parts, typeName: String) throws(JSONError)
        -> UInt64
    {
        // Fast path: plain integer text.
        if !p.hasFractionOrExponent {
            var value: UInt64 = 0
            for i in p.intStart..<p.intEnd {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(UInt64(text[i] &- 48))
                if o1 || o2 { throw overflow(text, typeName) }
                value = a
            }
            return value
        }
        // Digits of int and frac as one mantissa; value = mantissa * 10^exp10.
        let digitCount = (p.intEnd - p.intStart) + (p.fracEnd - p.fracStart)
        @inline(__always) func digit(_ k: Int) -> UInt8 {
            let intCount = p.intEnd - p.intStart
            return k < intCount ? text[p.intStart + k] &- 48 : text[p.fracStart + k - intCount] &- 48
        }
        var exp10 = p.exponent - (p.fracEnd - p.fracStart)
        var used = digitCount
        // Drop trailing zeros of the mantissa while the exponent is negative.
        while exp10 < 0, used > 0, digit(used - 1) == 0 {
            used -= 1
            exp10 += 1
        }
        var value: UInt64 = 0
        for k in 0..<used {
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(UInt64(digit(k)))
            if o1 || o2 { throw overflow(text, typeName) }
            value = a
        }
        if value == 0 { return 0 }
        if exp10 < 0 {
            throw JSONError(.number, "number \(describe(text)) is not an integer, cannot convert to \(typeName)")
        }
        for _ in 0..<exp10 {
            let (m, o) = value.multipliedReportingOverflow(by: 10)
            if o { throw overflow(text, typeName) }
            value = m
        }
        return value
    }

    static func overflow(_ text: UnsafeRawBufferPointer, _ typeName: String) -> JSONError {
        JSONError(.number, "number \(describe(text)) does not fit in \(typeName)")
    }

    static func parts(_ text: UnsafeRawBufferPointer) throws(JSONError) -> Parts {
        guard let p = split(text) else {
            throw JSONError(.number, "\(describe(text)) is not a JSON number")
        }
        return p
    }

    static func int64(_ text: UnsafeRawBufferPointer) throws(JSONError) -> Int64 {
        let p = try parts(text)
        let m = try magnitude(text, p, typeName: "Int64")
        if p.negative {
            if m <= UInt64(Int64.max) { return -Int64(m) }
            if m == UInt64(Int64.max) + 1 { return .min }
            throw overflow(text, "Int64")
        }
        guard m <= UInt64(Int64.max) else { throw overflow(text, "Int64") }
        return Int64(m)
    }

    static func uint64(_ text: UnsafeRawBufferPointer) throws(JSONError) -> UInt64 {
        let p = try parts(text)
        let m = try magnitude(text, p, typeName: "UInt64")
        if p.negative, m != 0 { throw overflow(text, "UInt64") }
        return m
    }

    private static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// The nearest `Double` (round half to even), independent of the C locale.
    /// Fails with ``JSONError/Code-swift.struct/number`` when the magnitude overflows to infinity.
    static func double(_ text: UnsafeRawBufferPointer) throws(JSONError) -> Double {
        let p = try parts(text)
        // Clinger's fast path: at most 15 significant digits and a small power of ten are exact.
        let digitCount = (p.intEnd - p.intStart) + (p.fracEnd - p.fracStart)
        if digitCount <= 15 {
            var mantissa: UInt64 = 0
            for i in p.intStart..<p.intEnd { mantissa = mantissa &* 10 &+ UInt64(text[i] &- 48) }
            for i in p.fracStart..<p.fracEnd { mantissa = mantissa &* 10 &+ UInt64(text[i] &- 48) }
            let exp10 = p.exponent - (p.fracEnd - p.fracStart)
            if mantissa == 0 { return p.negative ? -0.0 : 0.0 }
            if exp10 >= -22, exp10 <= 22 {
                var v = Double(mantissa)
                if exp10 >= 0 { v *= exactPowersOfTen[exp10] } else { v /= exactPowersOfTen[-exp10] }
                return p.negative ? -v : v
            }
        }
        // The standard library's parser is correctly rounded and uses the C locale.
        guard let v = Double(String(decoding: text, as: UTF8.self)) else {
            throw JSONError(.number, "\(describe(text)) is not a JSON number")
        }
        if v.isInfinite { throw overflow(text, "Double") }
        return v
    }

    /// An exact `Decimal`: fails when the number has more than 38 significant digits or its
    /// exponent is outside `Decimal`'s range.
    static func decimal(_ text: UnsafeRawBufferPointer) throws(JSONError) -> Decimal {
        let p = try parts(text)
        var significant = 0
        var started = false
        var trailingZeros = 0
        for i in Array(p.intStart..<p.intEnd) + Array(p.fracStart..<p.fracEnd) {
            let d = text[i]
            if d != UInt8(ascii: "0") { started = true }
            if started {
                significant += 1
                trailingZeros = d == UInt8(ascii: "0") ? trailingZeros + 1 : 0
            }
        }
        significant -= trailingZeros
        let exp10 = p.exponent - (p.fracEnd - p.fracStart) + trailingZeros
        if significant > 38 {
            throw JSONError(
                .number,
                "number \(describe(text)) has more than 38 significant digits, cannot convert to Decimal exactly")
        }
        if significant == 0 { return Decimal(0) }
        guard exp10 >= -128, exp10 <= 127 + (38 - significant),
            let d = Decimal(string: String(decoding: text, as: UTF8.self)), !d.isNaN
        else {
            throw overflow(text, "Decimal")
        }
        return d
    }
}
