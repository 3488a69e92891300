/// Request paths as collection keys: the **non-fielded endpoint** of a request.
public enum Endpoint {
    /// The query parameters removed by default: paging and field selection.
    public static let defaultIgnoredParameters: Set<String> = [
        "offset", "count", "limit", "page", "per_page", "cursor", "field", "fields", "$skip", "$top", "$select",
        "$skiptoken",
    ]

    /// The non-fielded form of `pathAndQuery`: paging and field-selection parameters removed,
    /// the rest sorted by name then value, percent-encoding made consistent, and no `?` when
    /// nothing is left.
    ///
    /// `/users/friends/?offset=10&count=2&field=firstname,age&gender=male` →
    /// `/users/friends/?gender=male`
    public static func nonFielded(
        _ pathAndQuery: String, ignoring ignored: Set<String> = defaultIgnoredParameters
    ) -> String {
        let (path, all) = split(pathAndQuery)
        guard let all else { return String(path) }
        var parameters = all.filter { !$0.name.isEmpty && !ignored.contains($0.name) }
        parameters.sort { a, b in
            if a.name != b.name { return Array(a.name.utf8).lexicographicallyPrecedes(b.name.utf8) }
            return Array((a.value ?? "").utf8).lexicographicallyPrecedes((b.value ?? "").utf8)
        }
        if parameters.isEmpty { return String(path) }
        let joined = parameters.map { p in p.value.map { "\(p.name)=\($0)" } ?? p.name }.joined(separator: "&")
        return "\(path)?\(joined)"
    }

    /// The query parameters that select fields: a request with one of them asks for a partial
    /// view of the entities (see "Collections over time").
    public static let fieldSelectionParameters: Set<String> = ["field", "fields", "$select"]

    /// Whether `pathAndQuery` selects fields (has one of ``fieldSelectionParameters``).
    public static func selectsFields(_ pathAndQuery: String) -> Bool {
        split(pathAndQuery).query?.contains { fieldSelectionParameters.contains($0.name) } ?? false
    }

    /// The value of the query parameter `name` of `pathAndQuery` (its first one), in canonical
    /// form; nil when absent.
    static func parameter(_ name: String, of pathAndQuery: String) -> String? {
        split(pathAndQuery).query?.first { $0.name == name }.map { $0.value ?? "" }
    }

    /// The path, and the query's parameters in order (names and values in canonical form),
    /// without any fragment; nil parameters when there is no `?`.
    private static func split(_ pathAndQuery: String) -> (
        path: Substring, query: [(name: String, value: String?)]?
    ) {
        var text = Substring(pathAndQuery)
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        guard let mark = text.firstIndex(of: "?") else { return (text, nil) }
        var parameters: [(name: String, value: String?)] = []
        for piece in text[text.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
            if let eq = piece.firstIndex(of: "=") {
                parameters.append((canonical(piece[..<eq]), canonical(piece[piece.index(after: eq)...])))
            } else {
                parameters.append((canonical(piece), nil))
            }
        }
        return (text[..<mark], parameters)
    }

    /// Decodes every `%XX` and encodes again every byte outside the unreserved characters of
    /// RFC 3986 and `,:@/$`, with upper-case hex digits. A literal `+` stays as it is, and an
    /// encoded one (`%2B`) stays encoded: in a form-encoded query the two mean different things
    /// (a space and a plus sign).
    static func canonical(_ text: Substring) -> String {
        let input = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        let digits = Array("0123456789ABCDEF".utf8)
        func encode(_ b: UInt8) {
            bytes.append(UInt8(ascii: "%"))
            bytes.append(digits[Int(b >> 4)])
            bytes.append(digits[Int(b & 15)])
        }
        var i = 0
        while i < input.count {
            let b = input[i]
            if b == UInt8(ascii: "%"), i + 2 < input.count, let h = hex(input[i + 1]), let l = hex(input[i + 2]) {
                let decoded = h << 4 | l
                if isKept(decoded) { bytes.append(decoded) } else { encode(decoded) }
                i += 3
            } else {
                if isKept(b) || b == UInt8(ascii: "+") { bytes.append(b) } else { encode(b) }
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isKept(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ","),
            UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "$"):
            return true
        default:
            return false
        }
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - 55
        default: nil
        }
    }
}
