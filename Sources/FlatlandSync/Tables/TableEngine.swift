import Flatland
import FlatlandHTTP
import FlatlandJSON
import Foundation

/// The requests of one table, shared by ``Table`` and ``UntypedTable``: paths, headers, the
/// status mapping, and what each answer does to the session's store.
///
/// Every answer is streamed into the store by the session's backend, with this table's ingest
/// options: the rows are the top-level objects with an `id`, stored as `<prefix>-<id>`, in the
/// protocol's envelope.
struct TableEngine: Sendable {
    let session: Session
    let name: String
    let prefix: String
    /// The options, with the protocol the table speaks (its own, or its session's).
    let options: TableOptions
    let ingestOptions: IngestOptions
    /// The protocol spoken: headers, query style and verbs all follow from it.
    let version: TableProtocol
    /// Why no request of this table is sent (its options and its session name two protocols).
    let refusal: TableError<JSONObject>?

    /// - Parameter keepsTaskCollections: whether the store keeps each answer's task collection
    ///   (``IngestOptions/keepsTaskCollection``): an online table's requests are the app's own;
    ///   an offline sync's are not.
    init(session: Session, name: String, prefix: String, options: TableOptions, keepsTaskCollections: Bool = true) {
        self.session = session
        self.name = name
        self.prefix = prefix
        var options = options
        switch options.resolvedProtocol(in: session, table: name) {
        case .success(let version):
            self.version = version
            refusal = nil
        case .failure(let error):
            version = options.protocolVersion ?? .v2
            refusal = error
        }
        options.protocolVersion = version
        self.options = options
        var ingest = session.backend.configuration.ingestOptions
        // A row is an object with an `id` at the top, in a top-level array, or in the envelope's
        // items; an object with an `id` inside a row's field is part of the row. (Not the rule's
        // `nested: false`: an envelope is undecided until it ends, and an object inside an
        // undecided one counts as nested.)
        ingest.resolver = RuleResolver([
            RuleResolver.Rule(prefix: prefix, idKey: "id", parentKeys: ["", "results", "items"])
        ])
        ingest.envelope = version == .v3 ? .datasync : .results
        ingest.endpointEnvelopes = []
        ingest.unknownPrefix = .untyped
        // Asking for a count or for system properties does not change which rows a query has.
        ingest.ignoredParameters.formUnion(["$inlinecount", "$count", "__systemproperties"])
        ingest.keepsTaskCollection = keepsTaskCollections
        ingestOptions = ingest
    }

    var store: Store { session.store }

    func storeID(_ serverID: String) -> String { TableRowID.storeID(serverID: serverID, prefix: prefix) }
    func serverID(_ storeID: String) -> String { TableRowID.serverID(fromStoreID: storeID, prefix: prefix) }

    /// The protocol's name of a system property (nil where it has none).
    func wireName(_ property: SystemProperties) -> String? { version.name(of: property) }

    // MARK: Paths

    /// `?__systemproperties=…` for a v1 table that asks for system properties, else "".
    func systemPropertiesQuery() throws(TableError<JSONObject>) -> String {
        guard version == .v1, let properties = options.systemProperties else { return "" }
        do {
            return "?" + (try TableQuery(systemProperties: properties).queryString(protocol: .v1, style: options.style))
        } catch {
            throw failure(.invalidRequest, error.message)
        }
    }

    /// `/tables/{name}` or `/tables/{name}/{id}`, with the v1 system properties.
    func rowPath(_ serverID: String?) throws(TableError<JSONObject>) -> String {
        TableQuery.tablePath(name, id: serverID) + (try systemPropertiesQuery())
    }

    /// The path and query of `query` on this table, with the table's v1 system properties unless
    /// the query names its own.
    func queryPath(_ query: TableQuery) throws(TableError<JSONObject>) -> String {
        var query = query
        if version == .v1, query.systemProperties == nil { query.systemProperties = options.systemProperties }
        do {
            return try query.path(table: name, protocol: version, style: options.style)
        } catch {
            throw failure(.invalidRequest, error.message)
        }
    }

    /// The path and query of a next link, relative to the session's base URL, resolved against
    /// the path of the request whose answer carried it (`requestPath`):
    ///
    /// - an absolute URL (`http://host/api/tables/todoitem?$skip=100`), which must be on the
    ///   session's server (scheme, host and port): a link to another server is refused, so the
    ///   session's credentials never leave it;
    /// - an absolute path (`/api/tables/todoitem?$skip=100`), under the base URL's path when it
    ///   starts with it (otherwise taken as a path under the base URL);
    /// - a query string, with or without its `?` (`$skip=100&$top=50`), as the Datasync servers
    ///   write `nextLink`: the request's own path with this query, as the CommunityToolkit client
    ///   reads it (`UriBuilder(endpoint) { Query = nextLink }`).
    ///
    /// Bytes a URL cannot carry as they are (a space, a quote) are percent-encoded; `%XX` escapes
    /// are kept.
    func relativePath(ofLink link: String, requestPath: String) throws(TableError<JSONObject>) -> String {
        let link = link.trimmingCharacters(in: .whitespaces)
        guard !link.isEmpty else { throw failure(.invalidResponse, "the server sent an empty next link") }
        let base = session.environment.baseURL
        let basePath = base.path.hasSuffix("/") ? String(base.path.dropLast()) : base.path
        if link.hasPrefix("/") {
            // A path from the server's root (RFC 3986): under the base URL's path when it starts
            // with it; otherwise taken as a path under the base URL, as earlier versions did.
            var path = TableEngine.urlSafe(link)
            if !basePath.isEmpty, path.hasPrefix(basePath + "/") { path = String(path.dropFirst(basePath.count)) }
            return path
        }
        if !TableEngine.hasScheme(link) {
            let query = link.hasPrefix("?") ? String(link.dropFirst()) : link
            let path = requestPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
            return String(path) + "?" + TableEngine.urlSafe(query)
        }
        guard let components = URLComponents(string: TableEngine.urlSafe(link)), let host = components.host,
            host.lowercased() == base.host?.lowercased(),
            components.scheme?.lowercased() == base.scheme?.lowercased(),
            (components.port ?? defaultPort(components.scheme)) == (base.port ?? defaultPort(base.scheme))
        else {
            throw failure(.invalidResponse, "the next link \(link) is not on \(base.absoluteString)")
        }
        var path = components.percentEncodedPath
        if !basePath.isEmpty, path.hasPrefix(basePath) { path = String(path.dropFirst(basePath.count)) }
        if let query = components.percentEncodedQuery { path += "?" + query }
        return path
    }

    /// Whether `link` starts with a URI scheme and `://` (RFC 3986: a letter, then letters,
    /// digits, `+`, `-` or `.`).
    static func hasScheme(_ link: String) -> Bool {
        guard let colon = link.firstIndex(of: ":"), link[colon...].hasPrefix("://") else { return false }
        let scheme = link[..<colon]
        guard let first = scheme.first, first.isASCII, first.isLetter else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// `text` with every byte a URL's path or query cannot carry as it is written `%XX`: what
    /// RFC 3986 allows there (unreserved, sub-delimiters, `:@/?`) is kept, and so is a `%`
    /// that starts an escape.
    static func urlSafe(_ text: String) -> String {
        let bytes = Array(text.utf8)
        func isHex(_ b: UInt8) -> Bool {
            (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for (i, b) in bytes.enumerated() {
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E,  // unreserved
                0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D,  // sub-delims
                0x3A, 0x40, 0x2F, 0x3F:  // : @ / ?
                out.append(b)
            case 0x25 where i + 2 < bytes.count && isHex(bytes[i + 1]) && isHex(bytes[i + 2]):
                out.append(b)
            default:
                out += [0x25, hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func defaultPort(_ scheme: String?) -> Int? {
        switch scheme?.lowercased() {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    // MARK: Requests

    /// Sends one request of this table and maps its failure.
    ///
    /// - Parameter start: the position of the answer's first row, for a page whose request does
    ///   not say it (`$skip`), so that its rows take their places in the endpoint collection
    ///   (only a `GET`'s answer updates its endpoint's collection).
    ///   - condition: which rows of the answer are written (all when nil).
    ///   - commitPlan: what else the answer's commit does (``HTTPRequest/commitPlan``).
    func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:], start: Int? = nil,
        condition: (@Sendable (IncomingEntity) -> Bool)? = nil,
        commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)? = nil, endpointCollection: Bool = true
    ) async throws(TableError<JSONObject>) -> HTTPResult {
        if let refusal { throw refusal }
        // The protocol's version header, when no filter of the session set it.
        var headers = headers
        if let apiVersion = version.apiVersion, headers["ZUMO-API-VERSION"] == nil {
            headers["ZUMO-API-VERSION"] = apiVersion
        }
        var options = ingestOptions
        if let start { options.page.start = start }
        if let condition { options.condition = condition }
        // A write's answer (one row) is not a listing of its path: `POST /tables/todoitem` must
        // not replace what the last query of `/tables/todoitem` returned.
        options.updatesEndpointCollection = endpointCollection && method == .get
        do {
            return try await session.send(
                method, path, body: body, headers: headers, ingestOptions: options, commitPlan: commitPlan)
        } catch {
            throw mapped(error)
        }
    }

    /// A 412, 409, 404 or 410 as its own code, with the server's row of a 412 or 409; anything
    /// else as ``TableErrorCode/http``.
    func mapped(_ error: HTTPError) -> TableError<JSONObject> {
        guard error.code == .status, let status = error.status else {
            return TableError(code: .http, message: error.message, table: name, status: error.status, httpError: error)
        }
        let code: TableErrorCode
        let message: String
        switch status {
        case 412:
            (code, message) = (.preconditionFailed, "the row has changed on the server")
        case 409:
            (code, message) = (.conflict, "the row conflicts with the server's")
        case 404:
            (code, message) = (.notFound, "the row does not exist")
        case 410:
            (code, message) = (.gone, "the row is deleted")
        default:
            (code, message) = (.http, error.message)
        }
        var item: JSONObject?
        if code == .preconditionFailed || code == .conflict, case .object(let object)? = error.bodyJSON {
            item = object
        }
        return TableError(
            code: code, message: message, table: name, status: status, serverItem: item, serverItemJSON: item,
            body: error.body, httpError: error)
    }

    func failure(_ code: TableErrorCode, _ message: String) -> TableError<JSONObject> {
        TableError(code: code, message: message, table: name)
    }

    // MARK: Operations

    /// Sends a row (insert, update, undelete) and returns the store id of the row the server
    /// answered with, its ETag applied.
    func write(_ method: HTTPMethod, serverID: String?, pathID: String?, body: [UInt8]?, version: String?)
        async throws(TableError<JSONObject>) -> (storeID: String, result: HTTPResult)
    {
        var headers: HTTPHeaders = [:]
        if let version { headers["If-Match"] = TableVersionHeader.quoted(version) }
        let result = try await send(method, try rowPath(pathID), body: body, headers: headers)
        guard let id = result.items.first ?? serverID.map(storeID) else {
            throw failure(.invalidResponse, "the server answered \(result.status) without a row")
        }
        try applyETag(result, storeID: id)
        return (id, result)
    }

    /// Reads one row; sends `If-None-Match` with the stored version when the store has the row.
    func lookup(_ serverID: String) async throws(TableError<JSONObject>) -> (storeID: String, result: HTTPResult) {
        let id = storeID(serverID)
        var headers: HTTPHeaders = [:]
        if let stored = storedVersion(id) { headers["If-None-Match"] = TableVersionHeader.quoted(stored) }
        let result = try await send(.get, try rowPath(serverID), headers: headers)
        if result.status != 304 {
            guard result.items.contains(id) else {
                throw failure(.invalidResponse, "the server answered \(result.status) without the row \(serverID)")
            }
            try applyETag(result, storeID: id)
        }
        return (id, result)
    }

    /// Deletes one row on the server, then from the store.
    func delete(_ serverID: String, version: String?) async throws(TableError<JSONObject>) -> HTTPResult {
        var headers: HTTPHeaders = [:]
        if let version { headers["If-Match"] = TableVersionHeader.quoted(version) }
        let result = try await send(.delete, try rowPath(serverID), headers: headers)
        do {
            _ = try store.remove([storeID(serverID)])
        } catch {
            throw failure(.http, "the row was deleted on the server but not from the store: \(error)")
        }
        return result
    }

    /// The endpoint collection of `query`: its rows at their positions, over every page read.
    func collection(_ query: TableQuery) -> EntityCollection? {
        guard let path = try? queryPath(query) else { return nil }
        return store.collection(endpoint: path, ignoring: ingestOptions.ignoredParameters)
    }

    // MARK: Bodies

    /// The names of the system properties in every protocol: never written into a body.
    static let systemNames: Set<String> = [
        "createdAt", "updatedAt", "version", "deleted", "__createdAt", "__updatedAt", "__version", "__deleted",
    ]

    /// A row's body: `id` when given, then the members `write` adds (which must leave out the
    /// system properties). In v1, a member named `__…` is refused, as the v1 clients refuse it.
    func body(id: String?, keys: [String], write: (inout JSONWriter) -> Void) throws(TableError<JSONObject>)
        -> [UInt8]
    {
        if version == .v1, let reserved = keys.first(where: { $0.hasPrefix("__") }) {
            throw failure(.invalidRequest, "'\(reserved)': names starting with __ are the server's in v1")
        }
        var writer = JSONWriter()
        writer.beginObject()
        if let id {
            writer.key("id")
            writer.string(id)
        }
        write(&writer)
        writer.endObject()
        return writer.bytes
    }

    // MARK: The store

    /// The version the store holds for a row, under either protocol's name.
    func storedVersion(_ storeID: String) -> String? {
        guard let fields = store.record(id: storeID)?.fields else { return nil }
        for name in ["version", "__version"] {
            if case .string(let v)? = fields[name] { return v }
        }
        return nil
    }

    /// A response's `ETag` overwrites the stored version, where the row has one.
    func applyETag(_ result: HTTPResult, storeID: String) throws(TableError<JSONObject>) {
        guard let tag = result.headers["ETag"], let name = wireName(.version) else { return }
        let version = TableVersionHeader.version(fromETag: tag)
        // Only a version the store keeps: a v1 row read without `__version` stays as it was sent.
        guard !version.isEmpty, let stored = storedVersion(storeID), stored != version else { return }
        var change = StoreChange()
        change.upsert(id: storeID, fields: [name: .string(version)])
        do {
            try store.commit(change)
        } catch {
            throw failure(.http, "the ETag could not be stored: \(error)")
        }
    }

    /// A stored row as JSON: `id` (the server's) first, then its fields as stored.
    func row(_ storeID: String) -> JSONObject? {
        guard let record = store.record(id: storeID) else { return nil }
        var row: JSONObject = ["id": .string(serverID(storeID))]
        for (key, value) in record.fields where key != "id" { row[key] = value }
        return row
    }

    /// A JSON row as a typed entity, decoded without touching the session's store.
    func decode<T: Entity>(_ row: JSONObject, as type: T.Type) -> T? {
        guard let id = TableEngine.idText(row["id"]) else { return nil }
        let scratch = Store(registry: store.registry, taskCollectionLimit: 1)
        var writer = JSONWriter()
        writer.value(.object(row))
        guard (try? scratch.ingest(writer.bytes, options: ingestOptions)) != nil else { return nil }
        return scratch.entity(EntityID<T>(storeID(id)))
    }

    /// A row's `id` member as text: a string, or a number's exact text (v1 integer ids).
    static func idText(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s)?: s.isEmpty ? nil : s
        case .number(let n)?: n.description
        default: nil
        }
    }
}
