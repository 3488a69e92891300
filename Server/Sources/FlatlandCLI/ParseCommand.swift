import ArgumentParser
import FlatlandJSON

/// `flatland parse`: validate a JSON file with the strict streaming parser.
struct ParseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parse",
        abstract: "Check that a file is valid JSON (strict RFC 8259), streaming it in chunks.",
        discussion: """
            Exit 0 when valid (silent; --stats prints figures on stderr), 1 when invalid with
            'error: FILE:LINE:COLUMN: message' on stderr, 2 for usage or I/O problems.
            """
    )

    @Option(help: "Bytes read and fed per chunk.")
    var chunkSize: Int = 64 * 1024

    @Flag(help: "Accept // and /* */ comments.")
    var allowComments = false

    @Flag(help: "Accept several top-level values (JSON Lines, concatenated documents).")
    var multiple = false

    @Flag(help: "Print bytes, values, depth and throughput on stderr.")
    var stats = false

    @Argument(help: "The file to parse, or - for standard input.")
    var file: String

    func validate() throws {
        try InputFile.validate(chunkSize: chunkSize)
    }

    func run() throws {
        let counter = StatsHandler()
        let options = JSONParserOptions(allowComments: allowComments, allowMultipleValues: multiple)
        let parser = JSONStreamParser(handler: counter, options: options)
        let input = try InputFile(path: file)
        let start = monotonicSeconds()
        do {
            try input.forEachChunk(size: chunkSize) { chunk in try parser.feed(chunk) }
            try parser.finish()
        } catch let error as JSONError {
            throw CLIFailure.invalid("\(file):\(error.description)")
        }
        let seconds = monotonicSeconds() - start
        if stats {
            let bytes = parser.bytesConsumed
            let mbps = seconds > 0 ? Double(bytes) / 1_000_000 / seconds : 0
            FileHandleOutput.standardError.write(
                "bytes: \(bytes)\nvalues: \(counter.values)\nmax depth: \(counter.maxDepth)\n"
                    + "seconds: \(formatted(seconds, 4))\nMB/s: \(formatted(mbps, 1))\n")
        }
    }
}

/// Counts values and the deepest nesting.
final class StatsHandler: JSONEventHandler {
    var values = 0
    var depth = 0
    var maxDepth = 0

    func beginObject() {
        values += 1
        depth += 1
        maxDepth = max(maxDepth, depth)
    }
    func endObject() { depth -= 1 }
    func beginArray() {
        values += 1
        depth += 1
        maxDepth = max(maxDepth, depth)
    }
    func endArray() { depth -= 1 }
    func key(_ key: JSONBytes) {}
    func string(_ value: JSONBytes) { values += 1 }
    func number(_ value: JSONNumberText) { values += 1 }
    func bool(_ value: Bool) { values += 1 }
    func null() { values += 1 }
}

/// `value` with `digits` decimals, without Foundation's formatter.
func formatted(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var text = "\(rounded)"
    if let dot = text.firstIndex(of: ".") {
        let decimals = text.distance(from: dot, to: text.endIndex) - 1
        if decimals < digits { text += String(repeating: "0", count: digits - decimals) }
    } else if digits > 0 {
        text += "." + String(repeating: "0", count: digits)
    }
    return text
}
