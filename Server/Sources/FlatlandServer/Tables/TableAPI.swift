import Flatland
@_spi(FlatlandInternal) import FlatlandJSON
import Foundation

/// The `/tables/{name}` routes: the table protocol (v1, v2, v3) over a ``TableStorage``.
///
/// The protocol of a request is read from its `ZUMO-API-VERSION` (header or query parameter):
/// `2.0.x` is v2, `3.0.0` is v3; a request without one is v1 when v1 is served, and anything else
/// is a 400 that says what to send.
struct TableAPI: Sendable {
    /// Which protocol versions are served, and how.
    struct Configuration: Sendable {
        var tables: [TableDefinition] = [TableDefinition(name: "todoitem")]
        var protocols: Set<TableWire.Version> = [.v2, .v3]
        /// Rows in a page (a larger `$top` gets a page and a next link); nil: the protocol's
        /// default (``TableServing/defaultPageSize(_:)``).
        var pageSize: Int? = nil
        /// The largest `$top` accepted, more is a 400; nil: the protocol's default
        /// (``TableServing/defaultMaxTop(_:)``).
        var maxTop: Int? = nil
        /// The largest body read; more is a 413 (the server checks it while reading the body).
        var maxBodyBytes = TableServing.defaultMaxBodyBytes
        /// How long a write's idempotency key is remembered.
        var idempotencyTTL: Duration = TableServing.defaultIdempotencyTTL
        /// What links are built on, when set (``TableServing/publicURL``).
        var publicURL: String? = nil
        /// The largest row an idempotency record keeps a copy of (``TableIdempotency/maxRowBytes``).
        var idempotencyMaxRowBytes = TableIdempotency.defaultMaxRowBytes
        /// The most idempotency records one caller keeps (``TableIdempotency/maxPerScope``).
        var idempotencyMaxKeysPerCaller = TableIdempotency.defaultMaxPerScope
        /// The most operations one `$batch` takes; more is a 413.
        var maxBatchOperations = 1000
        /// Ties of `$orderby` in a random order per request (``TableServingQuirks/shuffledTies``).
        var shuffledTies = false

        /// The page size `version` gets.
        func pageSize(_ version: TableWire.Version) -> Int {
            max(1, pageSize ?? TableServing.defaultPageSize(version))
        }

        /// The largest `$top` `version` may ask for.
        func maxTop(_ version: TableWire.Version) -> Int { maxTop ?? TableServing.defaultMaxTop(version) }
    }

    let storage: any TableStorage
    let configuration: Configuration
    let tables: [String: TableDefinition]

    init(storage: any TableStorage, configuration: Configuration) {
        self.storage = storage
        self.configuration = configuration
        var tables: [String: TableDefinition] = [:]
        for table in configuration.tables { tables[table.name.lowercased()] = table }
        self.tables = tables
    }

    typealias Reply = SampleAPI.Reply

    /// Whether v3's `nextLink` is the query string alone, as Datasync writes it, rather than an
    /// absolute URL on the server's address.
    static let v3NextLinkIsQueryString = true

    static func error(_ status: Int, _ message: String) -> Reply {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("error")
        writer.string(message)
        writer.endObject()
        return Reply(status: status, body: writer.bytes)
    }

    /// The reply to a request whose path starts with `/tables`, or nil for any other path.
    /// `authenticate` names the caller a session token belongs to.
    func respond(
        method: String, path: String, query: [String: String], rawQuery: String? = nil, headers: [String: String],
        body: [UInt8], baseURL: String, authenticate: (String) -> SampleAPI.Caller = { _ in .invalid },
        faults: (any TableFaultHook)? = nil
    ) async -> Reply? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard parts.first == "tables" else { return nil }
        guard parts.count == 2 || parts.count == 3, !parts[1].isEmpty else {
            return Self.error(404, "no such route: \(path)")
        }
        let caller = Self.caller(headers, authenticate)
        if parts.count == 2, parts[1] == "$capabilities" || parts[1] == "$batch" {
            return await special(
                parts[1], method: method, query: query, headers: headers, body: body, baseURL: baseURL, caller: caller,
                faults: faults)
        }
        guard let table = tables[parts[1].lowercased()] else { return Self.error(404, "no table '\(parts[1])'") }
        let owner: String?
        switch Self.admit(caller, to: table) {
        case .failure(let refusal): return refusal.reply
        case .success(let o): owner = o
        }
        let wire: TableWire
        switch protocolVersion(query: query, headers: headers) {
        case .failure(let refusal): return refusal.reply
        case .success(let w): wire = w
        }
        if let bad = query.first(where: { TableBody.hasNUL($0.key) || TableBody.hasNUL($0.value) }) {
            let name = bad.key.replacingOccurrences(of: "\u{0}", with: "%00")
            return Self.error(400, "the query parameter '\(name)' holds a NUL character (%00), which no query takes")
        }
        let id = parts.count == 3 ? parts[2].removingPercentEncoding ?? parts[2] : nil
        if let id, let problem = Self.idProblem(id) { return Self.error(400, problem) }
        if let problem = Self.idempotencyKeyProblem(headers["idempotency-key"]) { return Self.error(400, problem) }
        let request = TableRequest(
            api: self, table: table, wire: wire, query: query, headers: headers, body: body, baseURL: baseURL,
            owner: owner, method: method, id: id, scope: Self.scope(caller), rawQuery: rawQuery)
        if method == "GET", id == nil { return await request.list(path: path) }
        return await request.route()
    }

    /// The scope of a caller's idempotency keys: its user, or "" when anonymous.
    static func scope(_ caller: SampleAPI.Caller) -> String {
        switch caller {
        case .user(let me), .pending(let me): me
        case .anonymous, .invalid: ""
        }
    }

    /// Why `key` cannot be an `Idempotency-Key`, or nil when it can (or is absent).
    static func idempotencyKeyProblem(_ key: String?) -> String? {
        guard let key else { return nil }
        if key.isEmpty || key.utf8.count > 255 || key.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "an Idempotency-Key must be 1 to 255 bytes without control characters"
        }
        return nil
    }
}

/// What a write request comes to: the write for the storage and how its result is answered,
/// or the reply that refuses the request before any write.
enum PreparedWrite {
    case reply(SampleAPI.Reply)
    case write(TableWrite, answer: @Sendable (Result<TableRow, TableStorageError>) -> SampleAPI.Reply)
}

extension TableRequest {
    /// Serves a request to one row (or an insert), by its method.
    func route() async -> Reply {
        if method == "GET", let id { return await lookup(id) }
        switch prepareWrite() {
        case .reply(let reply):
            return reply
        case .write(let write, let answer):
            let result =
                await api.storage.apply([write]).first
                ?? .failure(TableStorageError(code: .storage, message: "the storage answered no write"))
            return answer(result)
        }
    }

    /// The write this request asks for (by its method), or the reply that refuses it.
    func prepareWrite() -> PreparedWrite {
        switch (method, id) {
        case ("POST", nil): return insert()
        case ("POST", let id?): return undelete(id)
        case ("PATCH", let id?): return update(id, replace: false)
        case ("PUT", let id?): return update(id, replace: true)
        case ("DELETE", let id?): return delete(id)
        default: return .reply(TableAPI.error(405, "\(method) is not allowed on \(rowPath)"))
        }
    }
}

extension TableAPI {

    /// Who sent a request: the user of the session token in `Authorization: Bearer …` or
    /// `X-ZUMO-AUTH` (both given: they must name the same session), anonymous without either,
    /// invalid for anything else.
    static func caller(_ headers: [String: String], _ authenticate: (String) -> SampleAPI.Caller) -> SampleAPI.Caller {
        var tokens: [String] = []
        if let authorization = headers["authorization"] {
            guard authorization.hasPrefix("Bearer ") else { return .invalid }
            tokens.append(String(authorization.dropFirst(7)))
        }
        if let zumo = headers["x-zumo-auth"] { tokens.append(zumo) }
        guard let token = tokens.first else { return .anonymous }
        guard tokens.allSatisfy({ $0 == token }), !token.isEmpty else { return .invalid }
        return authenticate(token)
    }

    /// Whether `caller` may use `table`: the owner that scopes its rows (a per-user table's
    /// caller; nil for the others), or the 401/403 refusal.
    static func admit(_ caller: SampleAPI.Caller, to table: TableDefinition) -> Result<String?, TableRefusal> {
        let needsToken =
            "the table '\(table.name)' needs a valid session token (Authorization: Bearer … or X-ZUMO-AUTH)"
        switch (caller, table.access) {
        case (.invalid, _): return .failure(TableRefusal(error(401, "unknown session token")))
        case (_, .anonymous): return .success(nil)
        case (.anonymous, _): return .failure(TableRefusal(error(401, needsToken)))
        case (.pending, _): return .failure(TableRefusal(error(403, "the session is not confirmed yet (PUT /session)")))
        case (.user, .authenticated): return .success(nil)
        case (.user(let me), .perUser): return .success(me)
        }
    }

    /// Why `id` cannot be a row's id, or nil when it can.
    static func idProblem(_ id: String) -> String? {
        if id.isEmpty { return "an id cannot be empty" }
        if id.utf8.count > 255 { return "an id cannot be longer than 255 bytes" }
        if id.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0x2F }) {
            return "an id cannot hold '/' or control characters"
        }
        return nil
    }

    func protocolVersion(query: [String: String], headers: [String: String]) -> Result<TableWire, TableRefusal> {
        let given =
            query.first { $0.key.lowercased() == "zumo-api-version" }?.value ?? headers["zumo-api-version"]
        guard let given else {
            guard configuration.protocols.contains(.v1) else {
                return .failure(
                    TableRefusal(
                        Self.error(
                            400,
                            "this request needs a ZUMO-API-VERSION of 2.0.0 or 3.0.0 (header or query parameter)")))
            }
            let asked = query.first { $0.key.lowercased() == "__systemproperties" }?.value ?? ""
            return .success(TableWire(version: .v1, systemProperties: Self.v1SystemProperties(asked)))
        }
        let parts = given.split(separator: ".")
        if parts.count == 3, parts[0] == "2", parts[1] == "0", Int(parts[2]) != nil,
            configuration.protocols.contains(.v2)
        {
            return .success(.v2)
        }
        if given == "3.0.0", configuration.protocols.contains(.v3) { return .success(.v3) }
        let served = [TableWire.Version.v2, .v3].filter { configuration.protocols.contains($0) }
            .map { $0 == .v2 ? "2.0.0" : "3.0.0" }
        return .failure(
            TableRefusal(
                Self.error(
                    400,
                    "ZUMO-API-VERSION '\(given)' is not served here; send \(served.joined(separator: " or "))")))
    }

    /// The system properties v1's `__systemproperties` asks for (`*` for all; names with or
    /// without `__`); none when absent.
    static func v1SystemProperties(_ list: String) -> [TableWire.SystemProperty] {
        if list.trimmingCharacters(in: .whitespaces) == "*" { return TableWire.SystemProperty.allCases }
        let names = Set(
            list.split(separator: ",").map {
                var name = $0.trimmingCharacters(in: .whitespaces).lowercased()
                if name.hasPrefix("__") { name.removeFirst(2) }
                return name
            })
        return TableWire.SystemProperty.allCases.filter { names.contains($0.name(.v2).lowercased()) }
    }
}

/// One request to a table.
struct TableRequest: Sendable {
    let api: TableAPI
    let table: TableDefinition
    let wire: TableWire
    let query: [String: String]
    let headers: [String: String]
    let body: [UInt8]
    let baseURL: String
    /// The owner whose rows this request sees (a per-user table); nil: every row.
    let owner: String?
    /// The method, upper-case.
    let method: String
    /// The row's id (nil for the table).
    let id: String?
    /// The scope of the caller's idempotency keys (``TableAPI/scope(_:)``).
    let scope: String
    /// The query string as the request wrote it (for next links); nil: rebuilt from `query`.
    var rawQuery: String? = nil

    /// The row's (or the table's) path as the server writes it: what an idempotency key is
    /// bound to, the same for a request and for an operation of a batch.
    var rowPath: String {
        id.map { TableQueryPath.rowPath(table.name, $0) } ?? "/tables/" + TableQueryPath.encode(table.name)
    }

    /// The write's idempotency key, if it was sent one, to answer with `status`.
    private func idempotency(status: Int) -> TableIdempotency? {
        guard let key = headers["idempotency-key"] else { return nil }
        let ttl = api.configuration.idempotencyTTL.components
        return TableIdempotency(
            scope: scope, key: key, method: method, path: rowPath, status: status,
            ttl: ttl.seconds * 1_000_000 + ttl.attoseconds / 1_000_000_000_000,
            maxRowBytes: api.configuration.idempotencyMaxRowBytes,
            maxPerScope: api.configuration.idempotencyMaxKeysPerCaller)
    }

    /// The answer to a write replayed under its key: the first answer, whatever the row is now;
    /// a 422 when the key was first used for another method or path.
    private func replayed(_ record: TableIdempotencyRecord) -> Reply {
        guard record.method == method, record.path == rowPath else {
            return TableAPI.error(
                422,
                "the Idempotency-Key '\(headers["idempotency-key"] ?? "")' was used for \(record.method) \(record.path), not for \(method) \(rowPath)"
            )
        }
        guard record.complete || record.status == 204 else {
            // A large row, remembered by its version only, written again since: its first answer
            // is gone (see ``TableIdempotency/maxRowBytes``).
            var reply = TableAPI.error(
                409,
                "the write of Idempotency-Key '\(headers["idempotency-key"] ?? "")' was applied, but its row has changed since and its first answer is not kept"
            )
            reply.headers.append(("Idempotent-Replayed", "true"))
            return reply
        }
        var reply = record.status == 204 ? Reply(status: 204) : rowReply(record.row, status: record.status)
        if record.status == 204 { reply.headers.append(("ETag", "\"\(record.row.versionString)\"")) }
        if record.status == 201 {
            reply.headers.append(("Location", baseURL + TableQueryPath.rowPath(table.name, record.row.id)))
        }
        reply.headers.append(("Idempotent-Replayed", "true"))
        return reply
    }

    typealias Reply = TableAPI.Reply

    private var storage: any TableStorage { api.storage }

    private func parameter(_ name: String) -> String? {
        query.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    private var includeDeleted: Bool { parameter("__includeDeleted")?.lowercased() == "true" }

    private func rowReply(_ row: TableRow, status: Int = 200) -> Reply {
        var reply = Reply(status: status, body: JSONValue.object(row.json(wire)).jsonBytes)
        reply.headers.append(("ETag", "\"\(row.versionString)\""))
        return reply
    }

    private func failure(_ error: TableStorageError) -> Reply {
        switch error.code {
        case .notFound: return TableAPI.error(404, "The item does not exist")
        case .deleted:
            // Datasync answers a soft-deleted row with 410; the v1 and v2 servers with 404.
            return wire.version == .v3
                ? TableAPI.error(410, "The item is deleted") : TableAPI.error(404, "The item does not exist")
        case .badQuery: return TableAPI.error(400, error.message)
        case .exists, .versionMismatch:
            guard let current = error.current else { return TableAPI.error(409, error.message) }
            return rowReply(current, status: 409)
        case .storage: return TableAPI.error(500, error.message)
        case .replayed:
            guard let record = error.replay else { return TableAPI.error(500, error.message) }
            return replayed(record)
        }
    }

    /// A write's body as the server reads it: the client's fields (no id, no system property),
    /// and what the body says of the row.
    struct ParsedBody {
        var fields = JSONObject()
        var id: String?
        /// The version the body carries under the protocol's name.
        var version: String?
        /// v3: the `deleted` the body gives (a `PUT` with `"deleted":false` undeletes).
        var deleted: Bool?
    }

    /// The body as a JSON object (see ``TableBody``): 415 when the request's `Content-Type` is
    /// not JSON, 400 when it does not parse, is no object, gives a member twice or holds a NUL.
    ///
    /// System property names are reserved in every protocol (``TableBody/reservedNames``): the
    /// server sets them, so a body's are dropped, as the Azure and Datasync servers ignore the
    /// client's; the protocol's `version` is the expected version, v3's `deleted:false` an
    /// undelete. v1 refuses every other `__` name, as the Mobile Services servers did.
    private func parseBody() -> Result<ParsedBody, TableRefusal> {
        guard TableBody.isJSON(contentType: headers["content-type"]) else {
            return .failure(
                TableRefusal(
                    TableAPI.error(
                        415,
                        "the body must be JSON (Content-Type: application/json), not '\(headers["content-type"] ?? "")'"
                    )))
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: body)
        } catch {
            return .failure(TableRefusal(TableAPI.error(400, "the body is not valid JSON: \(error)")))
        }
        guard case .object(let object) = value else {
            return .failure(TableRefusal(TableAPI.error(400, "the body must be a JSON object")))
        }
        if let problem = TableBody.problem(in: value) { return .failure(TableRefusal(TableAPI.error(400, problem))) }
        var parsed = ParsedBody()
        for (key, value) in object.members {
            if key == "id" {
                guard case .string(let s) = value else {
                    if value == .null { continue }
                    return .failure(TableRefusal(TableAPI.error(400, "id must be a string")))
                }
                parsed.id = s
            } else if TableBody.reservedNames.contains(key) || wire.systemProperty(named: key) != nil {
                if wire.version == .v1, key != "__version", key.hasPrefix("__") {
                    return .failure(
                        TableRefusal(TableAPI.error(400, "'\(key)' is set by the server: leave it out of the body")))
                }
                if key == TableWire.SystemProperty.version.name(wire.version), case .string(let s) = value {
                    parsed.version = s
                }
                if wire.version == .v3, key == "deleted", case .bool(let b) = value { parsed.deleted = b }
            } else if wire.version == .v1, key.hasPrefix("__") {
                return .failure(TableRefusal(TableAPI.error(400, "'\(key)' is not a system property")))
            } else {
                parsed.fields.members.append((key: key, value: value))
            }
        }
        if let schema = table.schema, let problem = schema.problem(parsed.fields, partial: method == "PATCH") {
            return .failure(TableRefusal(TableAPI.error(400, problem)))
        }
        return .success(parsed)
    }

    /// The version an `If-Match` names (`"…"`, `W/"…"`), `.some(nil)` for `*`, nil when absent;
    /// a version no row can have reads as -1.
    private func ifMatch() -> Int64?? {
        guard var text = headers["if-match"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if text == "*" { return .some(nil) }
        if text.hasPrefix("W/") { text.removeFirst(2) }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        text = text.replacingOccurrences(of: "\\\"", with: "\"")
        return .some(TableRow.version(from: text) ?? -1)
    }

    /// What an `If-None-Match` forbids (``TableWrite/NoneMatch``), nil when absent; a tag that
    /// names no version forbids nothing.
    private func ifNoneMatch() -> TableWrite.NoneMatch? {
        guard let text = headers["if-none-match"]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return nil
        }
        if text == "*" { return .any }
        var versions = Set<Int64>()
        for tag in text.split(separator: ",") {
            var tag = tag.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return .any }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            if tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2 { tag = String(tag.dropFirst().dropLast()) }
            if let version = TableRow.version(from: tag) { versions.insert(version) }
        }
        return .versions(versions)
    }

    func lookup(_ id: String) async -> Reply {
        let row: TableRow?
        do { row = try await storage.row(table.name, id: id, owner: owner) } catch { return failure(error) }
        guard let row else { return TableAPI.error(404, "The item does not exist") }
        if row.deleted, !includeDeleted {
            return wire.version == .v3
                ? TableAPI.error(410, "The item is deleted") : TableAPI.error(404, "The item does not exist")
        }
        // If-Match on a read (Datasync): a row of another version is a 412 with the row.
        if let expected = ifMatch(), let version = expected, version != row.version {
            return rowReply(row, status: 412)
        }
        if let tag = headers["if-none-match"] {
            let tags = tag.split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "W/", with: "")
            }
            if tags.contains("*") || tags.contains("\"\(row.versionString)\"") {
                var reply = Reply(status: 304)
                reply.headers.append(("ETag", "\"\(row.versionString)\""))
                return reply
            }
        }
        return rowReply(row)
    }

    func insert() -> PreparedWrite {
        let parsed: ParsedBody
        switch parseBody() {
        case .failure(let refusal): return .reply(refusal.reply)
        case .success(let p): parsed = p
        }
        let id = parsed.id ?? UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        if let problem = TableAPI.idProblem(id) { return .reply(TableAPI.error(400, problem)) }
        let write = TableWrite(
            table: table.name, id: id, kind: .insert(fields: parsed.fields), owner: owner,
            idempotency: idempotency(status: 201))
        return .write(write) { [self] result in
            switch result {
            case .success(let row):
                var reply = rowReply(row, status: 201)
                reply.headers.append(("Location", baseURL + TableQueryPath.rowPath(table.name, id)))
                return reply
            case .failure(let error):
                return failure(error)
            }
        }
    }

    /// The preconditions of a write: `If-Match` (a mismatch is a 412), else the body's
    /// version (a mismatch is a 409, the v2 servers' rule), else none; and `If-None-Match`
    /// (a match is a 412 with nothing changed).
    private func expectation(bodyVersion: String?) -> Expectation {
        let noneMatch = ifNoneMatch()
        if let header = ifMatch() { return Expectation(version: header ?? nil, noneMatch: noneMatch, fromHeader: true) }
        if let bodyVersion {
            return Expectation(
                version: TableRow.version(from: bodyVersion) ?? -1, noneMatch: noneMatch, fromHeader: noneMatch != nil)
        }
        return Expectation(version: nil, noneMatch: noneMatch, fromHeader: noneMatch != nil)
    }

    /// A write's preconditions, and whether a failed one is a 412 (a header's) or a 409.
    struct Expectation: Sendable {
        var version: Int64?
        var noneMatch: TableWrite.NoneMatch?
        var fromHeader: Bool
    }

    private func conditional(_ fromHeader: Bool, _ error: TableStorageError) -> Reply {
        guard error.code == .versionMismatch, let current = error.current else { return failure(error) }
        return rowReply(current, status: fromHeader ? 412 : 409)
    }

    /// A write to an existing row, answered by `success` or as a conditional write fails.
    private func conditionalWrite(
        _ id: String, _ kind: TableWrite.Kind, expected: Expectation, status: Int, deletedMark: Bool? = nil,
        success: @escaping @Sendable (TableRow) -> Reply
    ) -> PreparedWrite {
        let write = TableWrite(
            table: table.name, id: id, kind: kind, expectedVersion: expected.version, noneMatch: expected.noneMatch,
            owner: owner, idempotency: idempotency(status: status), deletedMark: deletedMark)
        return .write(write) { [self] result in
            switch result {
            case .success(let row): return success(row)
            case .failure(let error): return conditional(expected.fromHeader, error)
            }
        }
    }

    func update(_ id: String, replace: Bool) -> PreparedWrite {
        let parsed: ParsedBody
        switch parseBody() {
        case .failure(let refusal): return .reply(refusal.reply)
        case .success(let p): parsed = p
        }
        if let bodyID = parsed.id, bodyID != id {
            return .reply(TableAPI.error(400, "the body's id '\(bodyID)' is not the id in the path"))
        }
        // v3: a soft-deleted row is written only with __includedeleted=true (a PUT), or by a
        // PATCH that undeletes it; "deleted":false in either undeletes, as Datasync does.
        let undeletes = wire.version == .v3 && parsed.deleted == false
        let kind = TableWrite.Kind.update(
            fields: parsed.fields, replace: replace,
            allowDeleted: wire.version != .v3 || includeDeleted || (undeletes && !replace))
        return conditionalWrite(
            id, kind, expected: expectation(bodyVersion: parsed.version), status: 200,
            deletedMark: undeletes ? false : nil
        ) { [self] row in rowReply(row) }
    }

    func delete(_ id: String) -> PreparedWrite {
        let v3 = wire.version == .v3
        return conditionalWrite(
            id, .delete(soft: table.softDelete), expected: expectation(bodyVersion: nil), status: v3 ? 204 : 200
        ) { [self] row in v3 ? Reply(status: 204) : rowReply(row) }
    }

    func undelete(_ id: String) -> PreparedWrite {
        conditionalWrite(id, .undelete, expected: expectation(bodyVersion: nil), status: 200) { [self] row in
            rowReply(row)
        }
    }

    func list(path: String) async -> Reply {
        var rowQuery = TableRowQuery(top: api.configuration.pageSize(wire.version))
        rowQuery.shuffledTies = api.configuration.shuffledTies
        if let filter = parameter("$filter") {
            do { rowQuery.filter = try ODataFilter.parse(filter) } catch {
                return TableAPI.error(400, error.description)
            }
        }
        if let order = parameter("$orderby") {
            for term in order.split(separator: ",") {
                let words = term.split(separator: " ")
                guard let field = words.first, words.count <= 2,
                    words.count == 1 || ["asc", "desc"].contains(words[1].lowercased())
                else { return TableAPI.error(400, "$orderby: '\(term)' is not 'FIELD', 'FIELD asc' or 'FIELD desc'") }
                rowQuery.orderBy.append((String(field), words.count == 2 && words[1].lowercased() == "desc"))
            }
        }
        var skip = 0
        if let text = parameter("$skip") {
            guard let n = Int(text), n >= 0 else {
                return TableAPI.error(400, "$skip must be a whole number, 0 or more")
            }
            skip = n
        }
        let pageSize = api.configuration.pageSize(wire.version)
        let maxTop = api.configuration.maxTop(wire.version)
        var top: Int?
        if let text = parameter("$top") {
            guard let n = Int(text), n >= 0 else {
                return TableAPI.error(400, "$top must be a whole number, 0 or more")
            }
            guard n <= maxTop else {
                return TableAPI.error(400, "You cannot request more than \(maxTop) records ($top is at most \(maxTop))")
            }
            top = n
        }
        let select = parameter("$select").map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        // A page holds at most the page size: a larger $top (or none) gets one page and a link
        // to the rest, as the Datasync and Node servers page. One row more than the page is read
        // to know whether another page follows.
        let take = min(top ?? pageSize, pageSize)
        let mayFollow = top.map { $0 > take } ?? true
        rowQuery.skip = skip
        rowQuery.top = take + (mayFollow ? 1 : 0)
        rowQuery.includeDeleted = includeDeleted
        rowQuery.owner = owner
        rowQuery.includeCount =
            parameter("$inlinecount")?.lowercased() == "allpages" || parameter("$count")?.lowercased() == "true"
        let result: (rows: [[UInt8]], count: Int?)
        do {
            result = try await storage.encodedQuery(table.name, rowQuery, wire: wire, select: select)
        } catch {
            return failure(error)
        }
        var rows = result.rows
        var next: String?
        if rows.count > take {
            rows.removeLast(rows.count - take)
            next = nextQuery(skip: skip + take, top: top.map { $0 - take })
        }
        // The rows as the storage wrote them, in the envelope of the protocol.
        var writer = JSONWriter(capacity: rows.reduce(64) { $0 + $1.count + 1 })
        func items() {
            writer.beginArray()
            for row in rows { writer.json(value: row) }
            writer.endArray()
        }
        var reply = Reply(status: 200)
        switch wire.version {
        case .v3:
            // Both members always written, null when absent (Datasync's JSON options); the
            // next link is a query string, which the Datasync clients put on the table's URL.
            writer.beginObject()
            writer.key("items")
            items()
            writer.key("count")
            if let count = result.count { writer.number(count) } else { writer.null() }
            writer.key("nextLink")
            if let next {
                writer.string(TableAPI.v3NextLinkIsQueryString ? next : baseURL + path + "?" + next)
            } else {
                writer.null()
            }
            writer.endObject()
        case .v1, .v2:
            if let count = result.count {
                writer.beginObject()
                writer.key("results")
                items()
                writer.key("count")
                writer.number(count)
                writer.endObject()
            } else {
                items()
            }
            // An absolute URL on the server's own address (never the request's Host).
            if let next { reply.headers.append(("Link", "<\(baseURL + path + "?" + next)>; rel=next")) }
        }
        reply.body = writer.bytes
        return reply
    }

    /// The next page's query string, as Datasync writes it: this request's own options as they
    /// came, without `$skip` and `$top`, then `$skip=skip` and (when a `$top` was given)
    /// `$top=` what remains of it. Bytes a URL cannot hold as they are (space, `<`, `>`, `"`,
    /// non-ASCII…) are percent-encoded, so that the link is one URL whatever the request held.
    func nextQuery(skip: Int, top: Int?) -> String {
        var items: [String] = []
        if let rawQuery {
            for item in rawQuery.split(separator: "&", omittingEmptySubsequences: true) {
                let name = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                let decoded = (String(name).removingPercentEncoding ?? String(name)).lowercased()
                if decoded == "$skip" || decoded == "$top" { continue }
                items.append(TableQueryPath.sanitize(item))
            }
        } else {
            for (key, value) in query.sorted(by: { $0.key < $1.key })
            where !["$skip", "$top"].contains(key.lowercased()) {
                items.append(TableQueryPath.encode(key) + "=" + TableQueryPath.encode(value))
            }
        }
        if skip > 0 { items.append("$skip=\(skip)") }
        if let top, top > 0 { items.append("$top=\(top)") }
        return items.joined(separator: "&")
    }
}

/// Paths and query strings as the table server writes them in `Location` and next links.
enum TableQueryPath {
    static func rowPath(_ table: String, _ id: String) -> String { "/tables/" + encode(table) + "/" + encode(id) }

    /// A query string's item as the client wrote it, with every byte a URL cannot hold as it is
    /// (controls, space, `"<>\\^`{|}#`, non-ASCII) percent-encoded; `%XX` escapes kept.
    static func sanitize(_ item: Substring) -> String {
        var out = ""
        for byte in item.utf8 {
            switch byte {
            case 0x21, 0x24...0x3B, 0x3D, 0x3F...0x5A, 0x5F, 0x61...0x7A, 0x7E:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return out
    }

    /// Letters, digits, `-._~$'()*!,:` as they are; every other byte `%XX`.
    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E, 0x24, 0x27, 0x28, 0x29, 0x2A, 0x21,
                0x2C, 0x3A:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// A request refused before it reached the storage.
struct TableRefusal: Error {
    var reply: SampleAPI.Reply
    init(_ reply: SampleAPI.Reply) { self.reply = reply }
}
