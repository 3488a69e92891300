/// The version of the table protocol a client speaks to a server.
///
/// The three are the wire protocols of real table backends:
/// - ``v1``: Azure Mobile Services. System properties are prefixed (`__updatedAt`) and returned
///   only when asked for with `__systemproperties`; the app key goes in `X-ZUMO-APPLICATION`.
/// - ``v2``: Azure Mobile Apps. Unprefixed system properties, `ZUMO-API-VERSION: 2.0.0`,
///   responses as a bare array or `{"results":[…],"count":N}`, the next page in a `Link` header.
/// - ``v3``: Datasync. `ZUMO-API-VERSION: 3.0.0`, `PUT` replaces, responses as
///   `{"items":[…],"count":N,"nextLink":…}`, and no `createdAt`.
public enum TableProtocol: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Azure Mobile Services.
    case v1
    /// Azure Mobile Apps.
    case v2
    /// Datasync.
    case v3

    public var description: String { rawValue }

    /// The name this protocol gives a system property on the wire, or nil where it has none
    /// (`createdAt` in ``v3``).
    public func name(of property: SystemProperties.Element) -> String? {
        let base: String
        switch property {
        case .createdAt:
            if self == .v3 { return nil }
            base = "createdAt"
        case .updatedAt: base = "updatedAt"
        case .version: base = "version"
        case .deleted: base = "deleted"
        default: return nil
        }
        return self == .v1 ? "__" + base : base
    }

    /// The wire names of every system property this protocol has, in the order
    /// `createdAt`, `updatedAt`, `version`, `deleted`.
    public var systemPropertyNames: [String] {
        SystemProperties.ordered.compactMap { name(of: $0) }
    }

    /// Whether `name` is one of this protocol's system property names.
    public func isSystemProperty(_ name: String) -> Bool { systemPropertyNames.contains(name) }

    /// The `ZUMO-API-VERSION` this protocol sends, or nil (``v1`` sends none).
    public var apiVersion: String? {
        switch self {
        case .v1: nil
        case .v2: "2.0.0"
        case .v3: "3.0.0"
        }
    }
}

/// A set of the server-kept system properties of a table row.
///
/// ``TableProtocol/v1`` servers return only those asked for with `__systemproperties`; this is
/// the set a caller picks per table (``TableQuery/systemProperties``).
public struct SystemProperties: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// When the server created the row (not in ``TableProtocol/v3``).
    public static let createdAt = SystemProperties(rawValue: 1 << 0)
    /// When the server last wrote the row: what incremental pulls order and filter by.
    public static let updatedAt = SystemProperties(rawValue: 1 << 1)
    /// The row's opaque version, sent back in `If-Match`.
    public static let version = SystemProperties(rawValue: 1 << 2)
    /// Whether the row is soft-deleted.
    public static let deleted = SystemProperties(rawValue: 1 << 3)
    /// Every system property.
    public static let all: SystemProperties = [.createdAt, .updatedAt, .version, .deleted]

    static let ordered: [SystemProperties] = [.createdAt, .updatedAt, .version, .deleted]

    /// The set named by a comma list such as `updatedAt,deleted` or `__updatedAt,__deleted`
    /// (each name with or without the `__` prefix, any letter case), or `*` for ``all``.
    ///
    /// - Throws: ``TableQueryError`` naming the first word that is no system property.
    public init(parsing list: String) throws(TableQueryError) {
        let trimmed = list.trimmingSpaces
        if trimmed == "*" {
            self = .all
            return
        }
        var set = SystemProperties()
        for word in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            var name = Substring(String(word).trimmingSpaces)
            if name.hasPrefix("__") { name = name.dropFirst(2) }
            switch name.lowercased() {
            case "createdat": set.insert(.createdAt)
            case "updatedat": set.insert(.updatedAt)
            case "version": set.insert(.version)
            case "deleted": set.insert(.deleted)
            default:
                throw TableQueryError(
                    code: .invalidSystemProperty, message: "'\(word)' is not a system property (\(list))")
            }
        }
        self = set
    }

    /// The value of v1's `__systemproperties` parameter: `*` for ``all``, otherwise the
    /// prefixed names in the order `__createdAt`, `__updatedAt`, `__version`, `__deleted`,
    /// joined by commas.
    public var queryValue: String {
        if self == .all { return "*" }
        return Self.ordered.filter { contains($0) }.compactMap { TableProtocol.v1.name(of: $0) }
            .joined(separator: ",")
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let first = s.first, first == " " || first == "\t" { s = s.dropFirst() }
        while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
