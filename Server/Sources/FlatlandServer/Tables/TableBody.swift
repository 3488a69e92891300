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
    ///
    /// Every write's body passes here, and a batch's twice (whole, then each operation's): the
    /// walk allocates nothing for a body that has no problem (a path is spelled only for the
    /// one that has).
    static func problem(in value: JSONValue) -> String? {
        var steps: [PathStep] = []
        guard let found = problem(in: value, steps: &steps) else { return nil }
        let path = "$" + steps.reversed().map(\.text).joined()
        switch found {
        case .nul: return "\(path) holds a NUL character (\\u0000), which no table stores"
        case .nulInName: return "a member name in \(path) holds a NUL character (\\u0000)"
        case .twice(let key): return "the member '\(key)' is given twice in \(path)"
        }
    }

    /// What is wrong at a place of a body.
    private enum Found {
        case nul
        case nulInName
        case twice(String)
    }

    /// One step of a JSON path, below `$`.
    private enum PathStep {
        case index(Int)
        case member(String)

        var text: String {
            switch self {
            case .index(let i): "[\(i)]"
            case .member(let key): ".\(key)"
            }
        }
    }

    /// The problem in `value`, if any; `steps` then holds its path from it, innermost first.
    private static func problem(in value: JSONValue, steps: inout [PathStep]) -> Found? {
        switch value {
        case .string(let s):
            return hasNUL(s) ? .nul : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = problem(in: item, steps: &steps) {
                    steps.append(.index(index))
                    return found
                }
            }
            return nil
        case .object(let object):
            let members = object.members
            // A name given twice: compared pairwise in a small object (no set to build), through
            // a set in a large one.
            let large = members.count > 16
            var seen = Set<String>()
            if large { seen.reserveCapacity(members.count) }
            for (position, (key, member)) in members.enumerated() {
                if hasNUL(key) { return .nulInName }
                let twice = large ? !seen.insert(key).inserted : members[..<position].contains { $0.key == key }
                if twice { return .twice(key) }
                if let found = problem(in: member, steps: &steps) {
                    steps.append(.member(key))
                    return found
                }
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
