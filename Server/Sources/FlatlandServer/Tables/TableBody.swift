import FlatlandJSON
import Foundation

/// What every table route checks in a JSON body before anything is written: no member name
/// twice in one object, and no NUL character in a name or a string (see <doc:ServingTables>).
///
/// A NUL is refused rather than stored because PostgreSQL's `json` and `text` cannot hold one
/// (`\u0000` in a stored row made every later query of its table fail there): refusing it at
/// write keeps the two storages alike and every query answerable.
enum TableBody {
    /// Why `value` cannot be written, with its JSON path (`$.tags[2].name`), or nil when it can.
    static func problem(in value: JSONValue) -> String? {
        problem(in: value, at: "$")
    }

    private static func problem(in value: JSONValue, at path: String) -> String? {
        switch value {
        case .string(let s):
            return hasNUL(s) ? "\(path) holds a NUL character (\\u0000), which no table stores" : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let problem = problem(in: item, at: "\(path)[\(index)]") { return problem }
            }
            return nil
        case .object(let object):
            var seen = Set<String>()
            seen.reserveCapacity(object.count)
            for (key, member) in object.members {
                if hasNUL(key) { return "a member name in \(path) holds a NUL character (\\u0000)" }
                guard seen.insert(key).inserted else { return "the member '\(key)' is given twice in \(path)" }
                if let problem = problem(in: member, at: "\(path).\(key)") { return problem }
            }
            return nil
        case .null, .bool, .number:
            return nil
        }
    }

    /// Whether `text` holds U+0000.
    static func hasNUL(_ text: String) -> Bool { text.utf8.contains(0) }

    /// The names of the system properties of every protocol (`createdAt`, `updatedAt`,
    /// `version`, `deleted`, and their `__` forms): no row stores one as a field, so that no
    /// answer, in any protocol, holds one name twice.
    static let reservedNames: Set<String> = [
        "createdAt", "updatedAt", "version", "deleted", "__createdAt", "__updatedAt", "__version", "__deleted",
    ]

    /// Whether a request's `Content-Type` (nil: none given) admits a JSON body:
    /// `application/json`, or any `…/…+json` type such as `application/merge-patch+json`.
    static func isJSON(contentType: String?) -> Bool {
        guard let contentType else { return true }
        // The media type: before any parameter, without the blanks around it (by bytes: this
        // runs for every write, and Foundation's trimming cost more than the body's parse).
        let bytes = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }
        let isBlank = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
            let last = bytes.lastIndex(where: { !isBlank($0) })
        else { return true }
        let type = String(decoding: bytes[first...last], as: UTF8.self).lowercased()
        return type == "application/json" || type.hasSuffix("+json") || type == "text/json"
    }
}
