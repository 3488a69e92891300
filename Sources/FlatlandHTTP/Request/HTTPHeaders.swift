/// HTTP header fields in order, with case-insensitive names.
public struct HTTPHeaders: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The fields as sent or received, names as given.
    public private(set) var fields: [(name: String, value: String)] = []

    /// No fields.
    public init() {}

    /// Fields from a dictionary literal: `["Accept": "application/json"]`.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    /// Fields from name-value pairs.
    public init(_ pairs: [(String, String)]) {
        for (name, value) in pairs { add(name, value) }
    }

    /// The first value of `name` (any case), or nil; setting replaces every field of that name
    /// (nil removes them).
    public subscript(name: String) -> String? {
        get {
            let key = name.lowercased()
            return fields.first { $0.name.lowercased() == key }?.value
        }
        set {
            let key = name.lowercased()
            if let index = fields.firstIndex(where: { $0.name.lowercased() == key }) {
                fields.removeAll { $0.name.lowercased() == key }
                if let newValue { fields.insert((name, newValue), at: Swift.min(index, fields.count)) }
            } else if let newValue {
                fields.append((name, newValue))
            }
        }
    }

    /// Appends a field, keeping any others of that name.
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Every field of `other` replaces the fields of the same name here.
    public func merging(_ other: HTTPHeaders) -> HTTPHeaders {
        var result = self
        for name in Set(other.fields.map { $0.name.lowercased() }) { result[name] = nil }
        for field in other.fields { result.add(field.name, field.value) }
        return result
    }

    /// The number of fields.
    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name.lowercased() == $1.name.lowercased() && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for field in fields {
            hasher.combine(field.name.lowercased())
            hasher.combine(field.value)
        }
    }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// The fields in a canonical form (lower-case names, sorted), leaving out `ignored` names.
    func canonical(ignoring ignored: Set<String>) -> String {
        var lines: [String] = []
        for field in fields {
            let name = field.name.lowercased()
            if !ignored.contains(name) { lines.append(name + ": " + field.value) }
        }
        lines.sort()
        return lines.joined(separator: "\n")
    }
}
