/// An untyped JSON value: numbers keep their exact text, objects keep their key order (and any
/// duplicate keys), so parsing and writing a value gives back the same value.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// Parses one JSON document.
    public init<Bytes: Sequence<UInt8>>(parsing bytes: Bytes, options: JSONParserOptions = .strict)
        throws(JSONError)
    {
        let builder = JSONValueBuilder()
        try JSONStreamParser.parse(bytes, handler: builder, options: options)
        guard let value = builder.values.first else {
            throw JSONError(.truncated, "empty input: expected a JSON value")
        }
        self = value
    }

    /// Parses one JSON document from a string.
    public init(parsing text: String, options: JSONParserOptions = .strict) throws(JSONError) {
        try self.init(parsing: Array(text.utf8), options: options)
    }

    /// The member named `key` of an object (the last one, if the key repeats); nil otherwise.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index` of an array; nil otherwise or when out of range.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let items) = self, items.indices.contains(index) { return items[index] }
        return nil
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number, when this is a number.
    public var numberValue: JSONNumber? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The Boolean, when this is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    /// The JSON type's name, for messages: "null", "boolean", "number", "string", "array", "object".
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// The members of a JSON object in document order. Lookup by key returns the last member with
/// that key; iteration and writing keep every member.
///
/// Setting by key takes constant time on average: past 16 members, the first change by key
/// builds an index from each key to its last member, and later changes keep it up to date;
/// lookup by key uses it too. Until then (a parsed object, say) lookup searches the members.
/// Changing ``members`` directly drops the index, and so does setting a key to nil, which takes
/// time linear in the number of members; the next change by key builds it again.
public struct JSONObject: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    private var storage: [(key: String, value: JSONValue)]
    /// The position of the last member with each key, for every member; empty when not built
    /// (always so below ``indexThreshold`` members, where a search is cheaper than hashing).
    private var index: [String: Int] = [:]

    /// The fewest members for which changes by key build the index.
    static let indexThreshold = 16

    /// The members, in order.
    public var members: [(key: String, value: JSONValue)] {
        get { storage }
        set {
            storage = newValue
            index = [:]
        }
        _modify {
            // Anything may change: the index is built again when next needed.
            index = [:]
            yield &storage
        }
    }

    /// An object with these members, in this order.
    public init(_ members: [(key: String, value: JSONValue)] = []) { storage = members }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        storage = elements.map { (key: $0.0, value: $0.1) }
    }

    /// The number of members.
    public var count: Int { storage.count }

    /// The keys, in order.
    public var keys: [String] { storage.map(\.key) }

    /// The last member named `key`; setting replaces it in place, or appends a new member;
    /// setting nil removes every member with that key.
    public subscript(key: String) -> JSONValue? {
        get {
            // Below the threshold there is never an index: no need to look at it.
            if storage.count >= Self.indexThreshold, !index.isEmpty { return index[key].map { storage[$0].value } }
            return storage.last { $0.key == key }?.value
        }
        set {
            guard let newValue else {
                storage.removeAll { $0.key == key }
                index = [:]
                return
            }
            if storage.count < Self.indexThreshold {
                if let i = storage.lastIndex(where: { $0.key == key }) {
                    storage[i].value = newValue
                } else {
                    storage.append((key: key, value: newValue))
                }
                return
            }
            if index.isEmpty { buildIndex() }
            if let i = index[key] {
                storage[i].value = newValue
            } else {
                index[key] = storage.count
                storage.append((key: key, value: newValue))
            }
        }
    }

    /// Appends a member, even when its key is already there (as a parsed duplicate).
    mutating func append(key: String, value: JSONValue) {
        if !index.isEmpty { index[key] = storage.count }
        storage.append((key: key, value: value))
    }

    private mutating func buildIndex() {
        var built = [String: Int](minimumCapacity: storage.count)
        for (i, member) in storage.enumerated() { built[member.key] = i }
        index = built
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> { storage.makeIterator() }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.storage.count == rhs.storage.count
            && zip(lhs.storage, rhs.storage).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.count)
        for m in storage {
            hasher.combine(m.key)
            hasher.combine(m.value)
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByStringLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .number(JSONNumber(value)) }
    public init(floatLiteral value: Double) { self = .number(JSONNumber(floatLiteral: value)) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}

/// A ``JSONEventHandler`` that builds ``JSONValue``s: one per top-level value.
public final class JSONValueBuilder: JSONEventHandler {
    private enum Frame {
        case array([JSONValue])
        case object(JSONObject, pendingKey: String?)
    }

    private var stack: [Frame] = []
    /// The completed top-level values, in order.
    public private(set) var values: [JSONValue] = []

    /// Creates an empty builder.
    public init() {}

    private func add(_ value: JSONValue) {
        guard let top = stack.popLast() else {
            values.append(value)
            return
        }
        switch top {
        case .array(var items):
            items.append(value)
            stack.append(.array(items))
        case .object(var object, let key):
            object.append(key: key ?? "", value: value)
            stack.append(.object(object, pendingKey: nil))
        }
    }

    public func beginObject() { stack.append(.object(JSONObject(), pendingKey: nil)) }
    public func endObject() {
        if case .object(let object, _) = stack.popLast() { add(.object(object)) }
    }
    public func beginArray() { stack.append(.array([])) }
    public func endArray() {
        if case .array(let items) = stack.popLast() { add(.array(items)) }
    }
    public func key(_ key: JSONBytes) {
        if case .object(let object, _) = stack.popLast() { stack.append(.object(object, pendingKey: key.string)) }
    }
    public func string(_ value: JSONBytes) { add(.string(value.string)) }
    public func number(_ value: JSONNumberText) { add(.number(value.number)) }
    public func bool(_ value: Bool) { add(.bool(value)) }
    public func null() { add(.null) }
}
