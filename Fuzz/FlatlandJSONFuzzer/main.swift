// libFuzzer harness for FlatlandJSON. Built by scripts/fuzz.sh against the FlatlandJSON module,
// compiled with the same instrumentation.
//
// Input layout: byte 0 selects the options, bytes 1 and 2 the chunking, the rest is the JSON
// text. The text is parsed whole and in chunks, through the parser's fast path and through the
// strict states alone; the harness traps when the verdicts, the errors or the events delivered
// differ, when a parsed value does not round-trip through the writer, or when a number
// conversion disagrees with its text.

@_spi(Testing) import FlatlandJSON

/// Records events compactly: a tag byte, then the bytes of strings, keys and numbers.
final class FuzzRecorder: JSONEventHandler {
    var log: [UInt8] = []
    var numbers: [JSONNumber] = []

    func beginObject() { log.append(1) }
    func endObject() { log.append(2) }
    func beginArray() { log.append(3) }
    func endArray() { log.append(4) }
    func key(_ key: JSONBytes) { append(5, key) }
    func string(_ value: JSONBytes) { append(6, value) }
    func number(_ value: JSONNumberText) {
        append(7, value.bytes)
        numbers.append(value.number)
    }
    func bool(_ value: Bool) { log.append(value ? 8 : 9) }
    func null() { log.append(10) }

    private func append(_ tag: UInt8, _ bytes: JSONBytes) {
        // Strings and keys must be well-formed UTF-8: the ingestor makes strings of them unchecked.
        if tag != 7, String(validating: bytes.buffer, as: UTF8.self) == nil {
            fatalError("the parser delivered ill-formed UTF-8: \(Array(bytes.buffer))")
        }
        log.append(tag)
        let n = bytes.count
        log.append(UInt8(truncatingIfNeeded: n))
        log.append(UInt8(truncatingIfNeeded: n >> 8))
        log.append(contentsOf: bytes.buffer)
    }
}

struct FuzzOutcome {
    var error: JSONError?
    var log: [UInt8]
    var numbers: [JSONNumber]
}

func fuzzOptions(_ selector: UInt8) -> JSONParserOptions {
    var options = JSONParserOptions(
        allowComments: selector & 1 != 0, allowMultipleValues: selector & 2 != 0,
        replaceInvalidUTF8: selector & 4 != 0)
    if selector & 8 != 0 {
        // Small limits, so that every limit is reached often.
        options.limits = JSONLimits(
            maxDepth: Int(selector >> 4) % 8 + 1, maxStringLength: 12, maxKeyLength: 6, maxNumberLength: 9,
            maxTotalBytes: 40 + Int(selector >> 4) * 8)
    }
    return options
}

/// `fastPath` nil: the parser's own choice of path per chunk; false: always the strict states;
/// true: the fast path for every chunk it can take, however short. `holdsStrings` false: chunks
/// inside a long string go to libyajl at once, as they did before the parser held them.
func fuzzParse(
    _ text: UnsafeRawBufferPointer, options: JSONParserOptions, chunks: [Int]?, fastPath: Bool? = nil,
    holdsStrings: Bool = true
) -> FuzzOutcome {
    let recorder = FuzzRecorder()
    let parser = JSONStreamParser(handler: recorder, options: options)
    parser.holdsStrings = holdsStrings
    if let fastPath {
        parser.allowsFastPath = fastPath
        parser.fastPathMinimumBytes = 1
    }
    do throws(JSONError) {
        try fuzzFeed(text, chunks: chunks) { (bytes) throws(JSONError) in try parser.feed(bytes) }
        try parser.finish()
        return FuzzOutcome(error: nil, log: recorder.log, numbers: recorder.numbers)
    } catch {
        // Sticky errors: every later call throws the same error.
        do throws(JSONError) {
            try parser.finish()
            fatalError("finish after an error did not throw")
        } catch let again {
            if again != error { fatalError("a later call threw \(again), not \(error)") }
        }
        return FuzzOutcome(error: error, log: recorder.log, numbers: recorder.numbers)
    }
}

func checkNumber(_ number: JSONNumber) {
    let text = number.text
    guard JSONNumber(text) != nil else { fatalError("parser passed invalid number text \(text)") }
    if let v = try? number.int64(), number.isInteger, text != "-0" {
        if String(v) != text { fatalError("int64 \(v) differs from \(text)") }
    }
    if let v = try? number.uint64(), number.isInteger, text != "-0" {
        if String(v) != text { fatalError("uint64 \(v) differs from \(text)") }
    }
    if let d = try? number.double() {
        guard let back = JSONNumber(d), let again = try? back.double(), again == d || (again.isNaN && d.isNaN)
        else { fatalError("double \(d) of \(text) does not round-trip") }
    }
    _ = try? number.decimal()
    _ = try? number.integer(as: Int8.self)
    _ = try? number.integer(as: UInt16.self)
}

func checkRoundTrip(_ text: UnsafeRawBufferPointer, options: JSONParserOptions) {
    let builder = JSONValueBuilder()
    let parser = JSONStreamParser(handler: builder, options: options)
    do throws(JSONError) {
        try parser.feed(text)
        try parser.finish()
    } catch {
        fatalError("the value builder failed where the recorder did not: \(error)")
    }
    for value in builder.values {
        for pretty in [false, true] {
            let written = Array(value.jsonString(pretty: pretty).utf8)
            do throws(JSONError) {
                let again = try JSONValue(parsing: written)
                if again != value { fatalError("round trip changed the value: \(value) -> \(again)") }
            } catch {
                fatalError("writer output does not parse: \(error) in \(String(decoding: written, as: UTF8.self))")
            }
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    let options = fuzzOptions(data[0])
    let text = UnsafeRawBufferPointer(start: data + 3, count: size - 3)
    let whole = fuzzParse(text, options: options, chunks: nil)
    let chunks = fuzzChunkSizes(total: text.count, seed: data[1], maxSize: data[2])
    let chunked = fuzzParse(text, options: options, chunks: chunks, fastPath: true)
    if whole.error != chunked.error {
        fatalError(
            "chunking \(chunks) changed the verdict: whole \(String(describing: whole.error)), chunked \(String(describing: chunked.error))"
        )
    }
    if let e = whole.error, e.location == nil { fatalError("error without a location: \(e)") }
    if whole.log != chunked.log { fatalError("chunking \(chunks) changed the events") }
    let ones = fuzzParse(text, options: options, chunks: Array(repeating: 1, count: text.count))
    if ones.error != whole.error || ones.log != whole.log { fatalError("1-byte chunks changed the result") }
    // Holding the chunks inside a string until it ends changes nothing (without it, libyajl is
    // quadratic in a long string, so only on shorter inputs).
    if text.count <= 8192 {
        let unheld = fuzzParse(text, options: options, chunks: chunks, fastPath: true, holdsStrings: false)
        if unheld.error != chunked.error || unheld.log != chunked.log { fatalError("holding changed the result") }
    }
    // The fast path and the strict states agree, on the whole input and on every chunk alone.
    let states = fuzzParse(text, options: options, chunks: nil, fastPath: false)
    if states.error != whole.error || states.log != whole.log { fatalError("the fast path changed the result") }
    let fast = fuzzParse(text, options: options, chunks: nil, fastPath: true)
    if fast.error != whole.error || fast.log != whole.log { fatalError("the fast path changed the result") }
    for number in whole.numbers { checkNumber(number) }
    if whole.error == nil { checkRoundTrip(text, options: options) }
    return 0
}
