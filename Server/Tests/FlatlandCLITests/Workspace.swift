import FlatlandJSON
import Foundation
import Testing

/// A temporary directory of input files for one test.
final class Workspace {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes `text` to `name` (relative to the workspace) and returns `name`.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        try write(name, Data(text.utf8))
    }

    @discardableResult
    func write(_ name: String, _ data: Data) throws -> String {
        let file = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
        return name
    }

    /// Runs `flatland` with the workspace as the current directory.
    func run(_ arguments: [String], stdin: Data? = nil) async throws -> CLIRun {
        try await CLI.run(arguments, stdin: stdin, directory: url)
    }
}

/// A JSON value with every object's members sorted by key: values compare whatever the key order.
func canonical(_ value: JSONValue) -> JSONValue {
    switch value {
    case .array(let items): return .array(items.map(canonical))
    case .object(let object):
        return .object(
            JSONObject(object.members.map { (key: $0.key, value: canonical($0.value)) }.sorted { $0.key < $1.key }))
    default: return value
    }
}

/// The JSON Lines of a dump, each parsed and made key-order free.
func dumpLines(_ output: String) throws -> [JSONValue] {
    var lines = output.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.last == "", "the dump ends with a line feed")
    if lines.last == "" { lines.removeLast() }
    return try lines.map { canonical(try JSONValue(parsing: String($0))) }
}

/// The expected dump, written as JSON texts.
func expectedLines(_ texts: [String]) throws -> [JSONValue] {
    try texts.map { canonical(try JSONValue(parsing: $0)) }
}
