/// What the ingestor knows about an object when it asks whether the object is an entity.
public struct IdentityCandidate: Sendable {
    /// The scalar members named in ``IdentityResolver/identityKeys`` seen so far, as text
    /// (strings as their value, numbers as their exact text).
    public var values: [String: String]
    /// The key the object sits under (`"actor"` in `{"actor": {…}}`), if any; for an element of
    /// an array, the key of the array.
    public var parentKey: String?
    /// Whether the object is nested inside another entity.
    public var isNested: Bool
    /// The request's endpoint, if the ingest has one.
    public var endpoint: String?
}

/// The identity of an entity: its full id and the prefix that names its type.
public struct ResolvedIdentity: Hashable, Sendable {
    /// The full id, `<prefix>-<rest>`: the store's key.
    public var id: String
    /// The type prefix.
    public var prefix: String

    /// An identity; `id` should start with `prefix` and `-`.
    public init(id: String, prefix: String) {
        self.id = id
        self.prefix = prefix
    }
}

/// Decides which JSON objects are entities, and which.
///
/// The ingestor watches the members named in ``identityKeys`` and calls ``resolve(_:)`` once
/// all of them have been seen, or when the object ends with at least one of them. Members that
/// come before the identity is known are buffered and replayed, so key order does not matter.
public protocol IdentityResolver: Sendable {
    /// The member keys whose values identify an object.
    var identityKeys: [String] { get }
    /// The object's identity, or nil when it is not an entity.
    func resolve(_ candidate: IdentityCandidate) -> ResolvedIdentity?
    /// A member that holds the id itself and is therefore not a field of the entity (`"uuid"`
    /// for prefixed ids); nil when every member is a field.
    var idKey: String? { get }
    /// Whether an object in this position could be an entity at all. Objects that cannot are
    /// read as containers at once, without buffering. Defaults to true.
    func mayIdentify(parentKey: String?, isNested: Bool, endpoint: String?) -> Bool
    /// The member holding the id of an entity with `prefix`, for asking a server for it
    /// (``EntityRecord/missingFields(for:resolver:)``). Defaults to ``idKey``.
    func idKey(forPrefix prefix: String) -> String?
}

extension IdentityResolver {
    public var idKey: String? { nil }

    /// ``idKey``, whatever the prefix.
    public func idKey(forPrefix prefix: String) -> String? { idKey }

    public func mayIdentify(parentKey: String?, isNested: Bool, endpoint: String?) -> Bool { true }
}

/// The default rule: an object is an entity when its `key` member (default `"uuid"`) holds a
/// string `<prefix>-<rest>` with a prefix of `[a-z][a-z0-9]*` and a non-empty rest.
public struct PrefixedIDResolver: IdentityResolver {
    /// The id key.
    public let key: String
    public var identityKeys: [String] { [key] }
    public var idKey: String? { key }

    /// A resolver reading ids from `key`.
    public init(key: String = "uuid") { self.key = key }

    public func resolve(_ candidate: IdentityCandidate) -> ResolvedIdentity? {
        guard let id = candidate.values[key], let prefix = EntityIDFormat.prefix(of: id) else { return nil }
        return ResolvedIdentity(id: id, prefix: prefix)
    }
}

/// Identity rules for APIs whose ids are not prefixed: the type comes from a type field, from
/// the key an object sits under, or from the endpoint, and the id is made `<prefix>-<id>`.
///
/// GitHub's events API, for instance:
/// ```swift
/// RuleResolver([
///     .init(prefix: "ev", idKey: "id", typeKey: "type", typeSuffix: "Event"),
///     .init(prefix: "gu", idKey: "id", parentKeys: ["actor"]),
///     .init(prefix: "gr", idKey: "id", parentKeys: ["repo"]),
///     .init(prefix: "go", idKey: "id", parentKeys: ["org"]),
/// ])
/// ```
public struct RuleResolver: IdentityResolver {
    /// One rule; the first rule that matches an object decides.
    public struct Rule: Sendable {
        /// The prefix given to matching objects.
        public var prefix: String
        /// The member holding the id (a string or a number).
        public var idKey: String
        /// Match only objects under one of these keys.
        public var parentKeys: Set<String>?
        /// Match only objects whose `typeKey` member …
        public var typeKey: String?
        /// … ends with this text (`"Event"`) …
        public var typeSuffix: String?
        /// … or equals one of these values.
        public var typeValues: Set<String>?
        /// Match only when the endpoint's path starts with this text.
        public var endpointPrefix: String?
        /// Match only objects that are (true) or are not (false) nested in another entity.
        public var nested: Bool?

        /// A rule; every condition left nil matches anything.
        public init(
            prefix: String, idKey: String, parentKeys: Set<String>? = nil, typeKey: String? = nil,
            typeSuffix: String? = nil, typeValues: Set<String>? = nil, endpointPrefix: String? = nil,
            nested: Bool? = nil
        ) {
            self.prefix = prefix
            self.idKey = idKey
            self.parentKeys = parentKeys
            self.typeKey = typeKey
            self.typeSuffix = typeSuffix
            self.typeValues = typeValues
            self.endpointPrefix = endpointPrefix
            self.nested = nested
        }

        /// Whether the rule's conditions on nesting and the endpoint allow an object: the ones
        /// that are the same for every object at one nesting in one ingest.
        func allows(isNested: Bool, endpoint: String?) -> Bool {
            if let nested, nested != isNested { return false }
            if let endpointPrefix, !(endpoint ?? "").hasPrefix(endpointPrefix) { return false }
            return true
        }

        /// Whether the rule's conditions on an object's position allow it.
        func allows(parentKey: String?, isNested: Bool, endpoint: String?) -> Bool {
            allows(isNested: isNested, endpoint: endpoint) && parentKeys?.contains(parentKey ?? "") != false
        }
    }

    /// The rules, tried in order.
    public let rules: [Rule]
    public let identityKeys: [String]
    /// Each rule's id key and type key as indexes into ``identityKeys``.
    let keyIndexes: [(id: Int, type: Int?)]

    /// A resolver trying `rules` in order.
    public init(_ rules: [Rule]) {
        self.rules = rules
        var keys: [String] = []
        for rule in rules {
            for key in [rule.idKey, rule.typeKey].compactMap({ $0 }) where !keys.contains(key) { keys.append(key) }
        }
        identityKeys = keys
        keyIndexes = rules.map { rule in
            (id: keys.firstIndex(of: rule.idKey)!, type: rule.typeKey.map { keys.firstIndex(of: $0)! })
        }
    }

    /// ``resolve(_:)`` on the identity values by their index in ``identityKeys``, without making
    /// a candidate and its dictionary (the ingestor's path).
    func resolve(value: (Int) -> String?, parentKey: String?, isNested: Bool, endpoint: String?)
        -> ResolvedIdentity?
    {
        for (rule, indexes) in zip(rules, keyIndexes) {
            guard let id = value(indexes.id), rule.allows(parentKey: parentKey, isNested: isNested, endpoint: endpoint)
            else { continue }
            if let typeIndex = indexes.type {
                guard let type = value(typeIndex) else { continue }
                if let typeSuffix = rule.typeSuffix, !type.hasSuffix(typeSuffix) { continue }
                if let typeValues = rule.typeValues, !typeValues.contains(type) { continue }
            }
            return ResolvedIdentity(id: "\(rule.prefix)-\(id)", prefix: rule.prefix)
        }
        return nil
    }

    /// The id key of the first rule for `prefix`.
    public func idKey(forPrefix prefix: String) -> String? { rules.first { $0.prefix == prefix }?.idKey }

    /// (The ingestor asks a `ParentKeyFilter` made from the rules instead, once per object.)
    public func mayIdentify(parentKey: String?, isNested: Bool, endpoint: String?) -> Bool {
        rules.contains { $0.allows(parentKey: parentKey, isNested: isNested, endpoint: endpoint) }
    }

    public func resolve(_ candidate: IdentityCandidate) -> ResolvedIdentity? {
        resolve(
            value: { candidate.values[identityKeys[$0]] }, parentKey: candidate.parentKey,
            isNested: candidate.isNested, endpoint: candidate.endpoint)
    }
}

/// ``RuleResolver/mayIdentify(parentKey:isNested:endpoint:)`` worked out once for an ingest's
/// endpoint, and which rule an object's position lets through first. The ingestor asks it for
/// every object it opens; going through the rules each time copied them (and retained their
/// sets) for a few comparisons of short strings.
struct ParentKeyFilter {
    /// The rules that an object's nesting and the endpoint allow, in order: each one's index
    /// and the parent keys it requires (nil: any).
    private let top: ContiguousArray<(rule: Int, parentKeys: ContiguousArray<String>?)>
    private let nested: ContiguousArray<(rule: Int, parentKeys: ContiguousArray<String>?)>

    init(_ resolver: RuleResolver, endpoint: String?) {
        func allowed(isNested: Bool) -> ContiguousArray<(rule: Int, parentKeys: ContiguousArray<String>?)> {
            var allowed: ContiguousArray<(rule: Int, parentKeys: ContiguousArray<String>?)> = []
            for (i, rule) in resolver.rules.enumerated() where rule.allows(isNested: isNested, endpoint: endpoint) {
                allowed.append((i, rule.parentKeys.map { ContiguousArray($0) }))
                if rule.parentKeys == nil { break }  // no later rule is ever the first
            }
            return allowed
        }
        top = allowed(isNested: false)
        nested = allowed(isNested: true)
    }

    /// The index of the first rule whose conditions on position allow an object under
    /// `parentKey`, if any: the object may be an entity exactly when there is one.
    @inline(__always)
    func firstRule(parentKey: String?, isNested: Bool) -> Int32? {
        let key = parentKey ?? ""
        for entry in isNested ? nested : top {
            guard let keys = entry.parentKeys else { return Int32(truncatingIfNeeded: entry.rule) }
            if keys.contains(key) { return Int32(truncatingIfNeeded: entry.rule) }
        }
        return nil
    }
}
