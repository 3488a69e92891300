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
        Query(pathAndQuery).nonFielded(ignoring: ignored)
    }

    /// The query parameters that select fields: a request with one of them asks for a partial
    /// view of the entities (see "Collections over time").
    public static let fieldSelectionParameters: Set<String> = ["field", "fields", "$select"]

    /// Whether `pathAndQuery` selects fields (has one of ``fieldSelectionParameters``).
    public static func selectsFields(_ pathAndQuery: String) -> Bool {
        Query(pathAndQuery).selectsFields
    }

    /// A request's path and query parameters, read once: an ingest asks its request for its
    /// non-fielded form, its field selection and its paging parameters, and a pull's query
    /// (a long `$filter`) costs tens of microseconds to read each time.
    struct Query {
        /// The path, without the query or any fragment.
        let path: Substring
        /// The query's parameters in order (names and values in canonical form); nil when there
        /// is no `?`.
        let parameters: [(name: String, value: String?)]?

        init(_ pathAndQuery: String) {
            // Read as bytes: the delimiters are ASCII, and finding them by Character would break
            // the text into grapheme clusters first (most of the cost of a pull's query).
            let all = pathAndQuery.utf8
            let text = pathAndQuery[..<(all.firstIndex(of: UInt8(ascii: "#")) ?? all.endIndex)]
            guard let mark = text.utf8.firstIndex(of: UInt8(ascii: "?")) else {
                (path, parameters) = (text, nil)
                return
            }
            var parameters: [(name: String, value: String?)] = []
            let query = text.utf8[text.utf8.index(after: mark)...]
            for piece in query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
                if let eq = piece.firstIndex(of: UInt8(ascii: "=")) {
                    parameters.append(
                        (canonical(Substring(piece[..<eq])), canonical(Substring(piece[piece.index(after: eq)...]))))
                } else {
                    parameters.append((canonical(Substring(piece)), nil))
                }
            }
            (path, self.parameters) = (text[..<mark], parameters)
        }

        /// See ``Endpoint/nonFielded(_:ignoring:)``.
        func nonFielded(ignoring ignored: Set<String>) -> String {
            guard let parameters else { return String(path) }
            var kept = parameters.filter { !$0.name.isEmpty && !ignored.contains($0.name) }
            if kept.isEmpty { return String(path) }
            kept.sort { a, b in
                if a.name != b.name { return a.name.utf8.lexicographicallyPrecedes(b.name.utf8) }
                return (a.value ?? "").utf8.lexicographicallyPrecedes((b.value ?? "").utf8)
            }
            let joined = kept.map { p in p.value.map { "\(p.name)=\($0)" } ?? p.name }.joined(separator: "&")
            return "\(path)?\(joined)"
        }

        /// See ``Endpoint/selectsFields(_:)``.
        var selectsFields: Bool {
            parameters?.contains { fieldSelectionParameters.contains($0.name) } ?? false
        }

        /// The value of the query parameter `name` (its first one), in canonical form; nil when
        /// absent.
        func parameter(_ name: String) -> String? {
            parameters?.first { $0.name == name }.map { $0.value ?? "" }
        }
    }

    /// Decodes every `%XX` and encodes again every byte outside the unreserved characters of
    /// RFC 3986 and `,:@/$`, with upper-case hex digits. A literal `+` stays as it is, and an
    /// encoded one (`%2B`) stays encoded: in a form-encoded query the two mean different things
    /// (a space and a plus sign).
    static func canonical(_ text: Substring) -> String {
        // Most names and values have nothing to decode or encode: they are already canonical.
        if text.utf8.allSatisfy({ isKept($0) || $0 == UInt8(ascii: "+") }) { return String(text) }
        let input = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count + 16)
        func encode(_ b: UInt8) {
            bytes.append(UInt8(ascii: "%"))
            bytes.append(hexDigit(b >> 4))
            bytes.append(hexDigit(b & 15))
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

    /// The upper-case hex digit of `n` (0 to 15).
    private static func hexDigit(_ n: UInt8) -> UInt8 {
        n < 10 ? UInt8(ascii: "0") + n : UInt8(ascii: "A") + n - 10
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
