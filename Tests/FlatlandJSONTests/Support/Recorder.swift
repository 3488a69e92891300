import FlatlandJSON

/// One parser event, with owned copies of the text.
enum Event: Hashable, Sendable, CustomStringConvertible {
    case beginObject, endObject, beginArray, endArray
    case key(String)
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    var description: String {
        switch self {
        case .beginObject: "{"
        case .endObject: "}"
        case .beginArray: "["
        case .endArray: "]"
        case .key(let k): "key(\(k.debugDescription))"
        case .string(let s): "string(\(s.debugDescription))"
        case .number(let n): "number(\(n))"
        case .bool(let b): "\(b)"
        case .null: "null"
        }
    }
}

/// Records every event; optionally runs a check before recording, which may throw.
final class Recorder: JSONEventHandler {
    var events: [Event] = []
    /// Called with each event before it is recorded; throwing stops the parse.
    var intercept: ((Event, JSONNumberText?) throws -> Void)?

    init(intercept: ((Event, JSONNumberText?) throws -> Void)? = nil) { self.intercept = intercept }

    private func record(_ event: Event, _ number: JSONNumberText? = nil) throws {
        try intercept?(event, number)
        events.append(event)
    }

    func beginObject() throws { try record(.beginObject) }
    func endObject() throws { try record(.endObject) }
    func beginArray() throws { try record(.beginArray) }
    func endArray() throws { try record(.endArray) }
    func key(_ key: JSONBytes) throws { try record(.key(key.string)) }
    func string(_ value: JSONBytes) throws { try record(.string(value.string)) }
    func number(_ value: JSONNumberText) throws { try record(.number(value.text), value) }
    func bool(_ value: Bool) throws { try record(.bool(value)) }
    func null() throws { try record(.null) }
}

/// What a parse produced: the events delivered (also those before an error) and the error.
struct Outcome: Equatable, CustomStringConvertible {
    var events: [Event]
    var error: JSONError?

    var description: String {
        if let error {
            let place = error.location.map { "offset \($0.offset) at \($0)" } ?? "no location"
            return "error \(error.code) '\(error.message)' \(place) excerpt \(error.excerpt.debugDescription)"
                + " after \(events.count) events"
        }
        return "ok \(events)"
    }
}

/// The chunkings every streaming test runs with; `nil` feeds the input whole.
let chunkings: [Int?] = [1, 2, 3, 7, 64, 4096, nil]

/// Parses `bytes` in chunks of `chunkSize` bytes (whole when nil), with a parser that
/// `configure` may set up first.
func parse(
    _ bytes: [UInt8], chunkSize: Int?, options: JSONParserOptions = .strict, recorder: Recorder = Recorder(),
    configure: (JSONStreamParser) -> Void = { _ in }
) -> Outcome {
    let parser = JSONStreamParser(handler: recorder, options: options)
    configure(parser)
    do throws(JSONError) {
        let step = max(1, chunkSize ?? bytes.count)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + step)
            try parser.feed(bytes[start..<end])
            start = end
        }
        try parser.finish()
        return Outcome(events: recorder.events, error: nil)
    } catch {
        return Outcome(events: recorder.events, error: error)
    }
}

/// Parses with every chunking. Returns the whole-input outcome and a description of each
/// chunking whose outcome (events and error) differs from it.
func parseAllChunkings(_ bytes: [UInt8], options: JSONParserOptions = .strict) -> (
    outcome: Outcome, differences: [String]
) {
    let whole = parse(bytes, chunkSize: nil, options: options)
    var differences: [String] = []
    for size in chunkings.compactMap({ $0 }) {
        let chunked = parse(bytes, chunkSize: size, options: options)
        if chunked != whole { differences.append("chunk size \(size): \(chunked) vs whole: \(whole)") }
    }
    return (whole, differences)
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}

/// Bytes from a string in which `\xHH` stands for one raw byte (for invalid UTF-8).
func rawBytes(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    let u = Array(text.utf8)
    var i = 0
    while i < u.count {
        if u[i] == UInt8(ascii: "\\"), i + 3 < u.count, u[i + 1] == UInt8(ascii: "x"),
            let b = UInt8(String(decoding: u[(i + 2)...(i + 3)], as: UTF8.self), radix: 16)
        {
            out.append(b)
            i += 4
        } else {
            out.append(u[i])
            i += 1
        }
    }
    return out
}

/// A deterministic pseudo-random generator (SplitMix64), so property tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
