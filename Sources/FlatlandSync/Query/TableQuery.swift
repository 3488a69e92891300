/// A query of a table: filter, order, paging, projection and options, written on the wire
/// exactly as the official clients of each ``TableProtocol`` write it.
///
/// ```swift
/// var query = TableQuery(filter: .field("complete") == false)
/// query.orderBy = [.ascending("updatedAt")]
/// query.top = 50
/// query.includeDeleted = true
/// try query.path(table: "todoitem", protocol: .v2)
/// // /tables/todoitem?$filter=(complete%20eq%20false)&$orderby=updatedAt&$top=50&__includeDeleted=true
/// ```
///
/// Parameters come in the order the .NET clients write them: `$filter`, `$orderby`, `$skip`,
/// `$top`, `$select`, the count (`$inlinecount=allpages` in v1 and v2, `$count=true` in v3), the
/// caller's own parameters, then `__includeDeleted=true` (`__includedeleted=true` in v3) and, in
/// v1, `__systemproperties`.
public struct TableQuery: Sendable, Hashable {
    /// The `$filter`, if any.
    public var filter: TableFilter?
    /// The `$orderby` terms, first the most significant.
    public var orderBy: [Order]
    /// The `$skip`, if any.
    public var skip: Int?
    /// The `$top`, if any.
    public var top: Int?
    /// The `$select` fields (all when empty).
    public var select: [String]
    /// Asks for the total count (`$inlinecount=allpages`, or `$count=true` in v3).
    public var includeTotalCount: Bool
    /// Asks for soft-deleted rows too (`__includeDeleted=true`).
    public var includeDeleted: Bool
    /// v1 only: the system properties to return (`__systemproperties`); nil sends none.
    public var systemProperties: SystemProperties?
    /// The caller's own parameters, in order, after the protocol's.
    public var parameters: [Parameter]

    /// A query.
    public init(
        filter: TableFilter? = nil, orderBy: [Order] = [], skip: Int? = nil, top: Int? = nil, select: [String] = [],
        includeTotalCount: Bool = false, includeDeleted: Bool = false, systemProperties: SystemProperties? = nil,
        parameters: [Parameter] = []
    ) {
        self.filter = filter
        self.orderBy = orderBy
        self.skip = skip
        self.top = top
        self.select = select
        self.includeTotalCount = includeTotalCount
        self.includeDeleted = includeDeleted
        self.systemProperties = systemProperties
        self.parameters = parameters
    }

    /// One `$orderby` term.
    public struct Order: Sendable, Hashable {
        /// The field's wire name.
        public var field: String
        /// Whether the order is descending.
        public var descending: Bool

        /// A term.
        public init(field: String, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }

        /// `field` (or `field asc`, in styles that say so).
        public static func ascending(_ field: String) -> Order { Order(field: field) }
        /// `field desc`.
        public static func descending(_ field: String) -> Order { Order(field: field, descending: true) }

        /// Parses `FIELD`, `FIELD asc` or `FIELD desc` (as the command line takes it).
        public init(parsing text: String) throws(TableQueryError) {
            let words = text.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = words.first, words.count <= 2 else {
                throw TableQueryError(
                    code: .invalidValue, message: "'\(text)' is not 'FIELD', 'FIELD asc' or 'FIELD desc'")
            }
            field = String(first)
            switch words.count == 2 ? words[1].lowercased() : "asc" {
            case "asc": descending = false
            case "desc": descending = true
            default:
                throw TableQueryError(
                    code: .invalidValue, message: "'\(text)' is not 'FIELD', 'FIELD asc' or 'FIELD desc'")
            }
        }
    }

    /// A parameter of the caller's own, sent after the protocol's.
    public struct Parameter: Sendable, Hashable {
        /// Its name.
        public var name: String
        /// Its value.
        public var value: String

        /// A parameter.
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The query string, without the `?`, as `style` writes it (the protocol's default style
    /// when nil).
    ///
    /// - Throws: ``TableQueryError`` for a negative `$skip` or `$top`, an empty field name, a
    ///   parameter whose name the protocol reserves, or ``systemProperties`` outside v1.
    public func queryString(protocol version: TableProtocol, style: WireStyle? = nil) throws(TableQueryError) -> String
    {
        let style = style ?? .default(for: version)
        var items: [String] = []
        func add(_ name: String, _ value: String) { items.append(name + "=" + style.encode(value)) }

        if let filter { add("$filter", filter.odata(style, protocol: version)) }
        if !orderBy.isEmpty {
            for term in orderBy where term.field.isEmpty {
                throw TableQueryError(code: .invalidValue, message: "an $orderby term has no field")
            }
            add(
                "$orderby",
                orderBy.map {
                    $0.descending ? $0.field + " desc" : style.writesAscending ? $0.field + " asc" : $0.field
                }
                .joined(separator: ","))
        }
        if let skip {
            guard skip >= 0 else { throw TableQueryError(code: .invalidValue, message: "$skip is \(skip), below 0") }
            add("$skip", String(skip))
        }
        if let top {
            guard top >= 0 else { throw TableQueryError(code: .invalidValue, message: "$top is \(top), below 0") }
            add("$top", String(top))
        }
        if !select.isEmpty {
            if select.contains(where: \.isEmpty) {
                throw TableQueryError(code: .invalidValue, message: "$select names an empty field")
            }
            add("$select", select.joined(separator: ","))
        }
        if includeTotalCount {
            if version == .v3 { add("$count", "true") } else { add("$inlinecount", "allpages") }
        }
        for parameter in parameters {
            let lower = parameter.name.lowercased()
            guard !parameter.name.isEmpty, !lower.hasPrefix("$"), lower != "__includedeleted",
                lower != "__systemproperties"
            else {
                throw TableQueryError(
                    code: .reservedParameter, message: "the parameter name '\(parameter.name)' is the protocol's own")
            }
            items.append(style.encode(parameter.name) + "=" + style.encode(parameter.value))
        }
        if includeDeleted {
            if version == .v3 { add("__includedeleted", "true") } else { add("__includeDeleted", "true") }
        }
        if let systemProperties {
            guard version == .v1 else {
                throw TableQueryError(
                    code: .unsupported, message: "__systemproperties is a v1 parameter, not \(version)'s")
            }
            add("__systemproperties", systemProperties.queryValue)
        }
        return items.joined(separator: "&")
    }

    /// The path and query of this query on `table`: `/tables/{table}?…` (no `?` when the query
    /// is empty).
    public func path(table: String, protocol version: TableProtocol, style: WireStyle? = nil) throws(TableQueryError)
        -> String
    {
        let query = try queryString(protocol: version, style: style)
        let base = TableQuery.tablePath(table)
        return query.isEmpty ? base : base + "?" + query
    }

    /// `/tables/{name}`, the name percent-encoded as a path segment.
    public static func tablePath(_ table: String, id: String? = nil) -> String {
        var path = "/tables/" + encodeSegment(table)
        if let id { path += "/" + encodeSegment(id) }
        return path
    }

    /// A path segment: letters, digits and `-._~` as they are, every other byte as `%XX`.
    static func encodeSegment(_ text: String) -> String {
        percentEncode(text) { b in
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: true
            default: false
            }
        }
    }
}
