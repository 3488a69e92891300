import FlatlandJSON
import Testing

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Numbers keep their exact text; every conversion is exact or fails with code `.number`.
@Suite struct NumberTests {
    /// The number text of a one-number document, as the parser delivered it.
    private func parsed(_ text: String) throws -> JSONNumber {
        let value = try JSONValue(parsing: "[\(text)]")
        return try #require(value[0]?.numberValue)
    }

    /// The code of the JSONError that `body` throws; nil when it throws nothing.
    private func code(_ body: () throws -> Void) -> JSONError.Code? {
        do {
            try body()
            return nil
        } catch let error as JSONError {
            return error.code
        } catch {
            Issue.record("not a JSONError: \(error)")
            return nil
        }
    }

    @Test func int64Extremes() throws {
        #expect(try parsed("9223372036854775807").int64() == .max)
        #expect(try parsed("-9223372036854775808").int64() == .min)
        #expect(code { _ = try parsed("9223372036854775808").int64() } == .number)
        #expect(code { _ = try parsed("-9223372036854775809").int64() } == .number)
    }

    @Test func uint64Max() throws {
        #expect(try parsed("18446744073709551615").uint64() == .max)
        #expect(code { _ = try parsed("18446744073709551616").uint64() } == .number)
        #expect(code { _ = try parsed("-1").uint64() } == .number)
        #expect(try parsed("-0").uint64() == 0)
    }

    @Test func idsAbove2To53StayExact() throws {
        let n = try parsed("9007199254740993")
        #expect(n.text == "9007199254740993")
        #expect(try n.int64() == 9_007_199_254_740_993)
        #expect(Double(9_007_199_254_740_993 as Int64) == 9_007_199_254_740_992, "Double would lose it")
        let id = try parsed("10765432100123456789")
        #expect(try id.uint64() == 10_765_432_100_123_456_789)
        #expect(code { _ = try id.int64() } == .number)
        // Through the transient view in a handler too.
        var seen: UInt64 = 0
        let recorder = Recorder { _, number in if let number { seen = try number.uint64() } }
        _ = parse(#"{"id":10765432100123456789}"#.bytes, chunkSize: 3, recorder: recorder)
        #expect(seen == 10_765_432_100_123_456_789)
    }

    @Test func negativeZero() throws {
        let n = try parsed("-0")
        #expect(n.text == "-0")
        #expect(try n.int64() == 0)
        let d = try n.double()
        #expect(d == 0 && d.sign == .minus)
        #expect(JSONNumber(-Double.zero)?.text == "-0")
    }

    @Test func hugeAndTinyExponents() throws {
        let huge = try parsed("1e400")
        #expect(huge.text == "1e400", "the raw text is kept")
        #expect(code { _ = try huge.double() } == .number)
        #expect(code { _ = try parsed("-1e400").double() } == .number)
        #expect(try parsed("1e-400").double() == 0)
        #expect(try parsed("4.9e-324").double() == .leastNonzeroMagnitude)
        #expect(try parsed("1.7976931348623157e308").double() == .greatestFiniteMagnitude)
    }

    @Test(arguments: ["0.1", "0.2", "0.3", "3.141592653589793", "2.2250738585072014e-308", "1e23", "8.5", "123456.789"])
    func doubleIsCorrectlyRoundedAndRoundTrips(_ text: String) throws {
        let d = try parsed(text).double()
        #expect(d == Double(text), "correctly rounded, as the standard library parses it")
        let back = try #require(JSONNumber(d))
        #expect(try back.double() == d)
    }

    @Test func pointOneRoundTripsThroughDouble() throws {
        let d = try parsed("0.1").double()
        #expect(d == 0.1)
        #expect(JSONNumber(d)?.text == "0.1")
    }

    @Test(arguments: [
        ("1.0", 1), ("1e2", 100), ("1E+2", 100), ("100e-2", 1), ("0.5e1", 5), ("-2.50e1", -25), ("0e9", 0),
    ])
    func integralValuesInOtherShapesAreIntegers(_ text: String, _ expected: Int64) throws {
        let n = try parsed(text)
        #expect(!n.isInteger, "the text has a fraction or exponent")
        #expect(try n.int64() == expected)
        #expect(try n.integer(as: Int32.self) == Int32(expected))
    }

    @Test(arguments: ["1.5", "1e-1", "0.001e2", "123.4"])
    func fractionsAreNotIntegers(_ text: String) throws {
        let n = try parsed(text)
        #expect(code { _ = try n.int64() } == .number)
        #expect(code { _ = try n.uint64() } == .number)
    }

    @Test func smallIntegerTypesCheckRange() throws {
        #expect(try parsed("127").integer(as: Int8.self) == 127)
        #expect(code { _ = try parsed("128").integer(as: Int8.self) } == .number)
        #expect(try parsed("255").integer(as: UInt8.self) == 255)
        #expect(code { _ = try parsed("-1").integer(as: UInt8.self) } == .number)
        #expect(code { _ = try parsed("1e30").int64() } == .number)
    }

    @Test func integersOutOfRangeNameTheNumberAndTheType() throws {
        func message(_ body: () throws -> Void) -> String? {
            do {
                try body()
                return nil
            } catch {
                return (error as? JSONError)?.message ?? "\(error)"
            }
        }
        // The owned number and the transient text convert alike.
        #expect(message { _ = try parsed("128").integer(as: Int8.self) } == "number 128 does not fit in Int8")
        #expect(message { _ = try parsed("70000").integer(as: UInt16.self) } == "number 70000 does not fit in UInt16")
        #expect(try parsed("-32768").integer(as: Int16.self) == .min)
        var text = "4294967296"
        let transient: String? = text.withUTF8 { utf8 in
            let n = JSONNumberText(unsafeBuffer: UnsafeRawBufferPointer(utf8))
            #expect((try? n.integer(as: UInt64.self)) == 4_294_967_296)
            #expect((try? n.integer(as: Int.self)) == 4_294_967_296)
            return message { _ = try n.integer(as: UInt32.self) }
        }
        #expect(transient == "number 4294967296 does not fit in UInt32")
    }

    @Test func decimalIsExactUpTo38Digits() throws {
        #expect(try parsed("0.1").decimal() == Decimal(sign: .plus, exponent: -1, significand: 1))
        #expect(try parsed("-12.345").decimal() == Decimal(sign: .minus, exponent: -3, significand: 12345))
        let digits38 = "12345678901234567890123456789012345678"
        let d = try parsed(digits38).decimal()
        #expect(d.description == digits38)
        let fraction = "0.12345678901234567890123456789012345678"
        #expect(try parsed(fraction).decimal().description == fraction)
        #expect(try parsed("1e20").decimal() == Decimal(sign: .plus, exponent: 20, significand: 1))
        #expect(
            try parsed("100000000000000000000000000000000000000000000").decimal().description
                == "100000000000000000000000000000000000000000000", "trailing zeros are not significant")
    }

    @Test func decimalFailsBeyond38Digits() throws {
        #expect(code { _ = try parsed("123456789012345678901234567890123456789").decimal() } == .number)
        #expect(code { _ = try parsed("1e200").decimal() } == .number)
        #expect(code { _ = try parsed("1e-200").decimal() } == .number)
    }

    @Test func shortestRoundTripFromDouble() throws {
        let cases: [(Double, String)] = [
            (0.1, "0.1"), (1.0 / 3.0, "0.3333333333333333"), (100, "100"), (-42, "-42"), (1e21, "1e+21"),
            (.leastNonzeroMagnitude, "5e-324"), (1.5, "1.5"), (0.30000000000000004, "0.30000000000000004"),
            (9_007_199_254_740_992, "9007199254740992"), (1e15, "1000000000000000"), (-4e15 - 1, "-4000000000000001"),
        ]
        for (value, text) in cases {
            let n = try #require(JSONNumber(value))
            #expect(n.text == text)
            #expect(JSONNumber(n.text) != nil, "valid JSON number text")
            #expect(try n.double() == value)
        }
        #expect(JSONNumber(Double.nan) == nil)
        #expect(JSONNumber(Double.infinity) == nil)
        var random = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            let d = Double(bitPattern: random.next())
            guard d.isFinite, let n = JSONNumber(d) else { continue }
            #expect(try n.double() == d, "\(n.text)")
            #expect(JSONNumber(n.text) != nil)
        }
    }

    @Test func numberTextValidation() {
        #expect(JSONNumber("-0.5e+10") != nil)
        for bad in ["", "-", "01", "1.", ".1", "1e", "+1", "0x1", "NaN", "1 ", " 1", "1e+-1"] {
            #expect(JSONNumber(bad) == nil, "\(bad)")
        }
    }
}
