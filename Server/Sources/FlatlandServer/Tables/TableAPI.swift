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
        /// Rows in a page when the request gives no `$top`.
        var pageSize = 50
        /// The largest `$top` accepted; more is a 400.
        var maxTop = 1000
        /// The largest body read; more is a 413 (the server checks it while reading the body).
        var maxBodyBytes = TableServing.defaultMaxBodyBytes
        /// How long a write's idempotency key is remembered.
        var idempotencyTTL: Duration = TableServing.defaultIdempotencyTTL
        /// The most operations one `$batch` takes; more is a 413.
        var maxBatchOperations = 1000
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
        method: String, path: String, query: [String: String], headers: [String: String], body: [UInt8],
        baseURL: String, authenticate: (String) -> SampleAPI.Caller = { _ in .invalid },
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
        let id = parts.count == 3 ? parts[2].removingPercentEncoding ?? parts[2] : nil
        if let id, let problem = Self.idProblem(id) { return Self.error(400, problem) }
        if let problem = Self.idempotencyKeyProblem(headers["idempotency-key"]) { return Self.error(400, problem) }
        let request = TableRequest(
            api: self, table: table, wire: wire, query: query, headers: headers, body: body, baseURL: baseURL,
            owner: owner, method: method, id: id, scope: Self.scope(caller))
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
            ttl: ttl.seconds * 1_000_000 + ttl.attoseconds / 1_000_000_000_000)
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

    /// The body as a JSON object: its client fields, and the version it carries under the
    /// protocol's name.
    private func parseBody() -> Result<(fields: JSONObject, id: String?, version: String?), TableRefusal> {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: body)
        } catch {
            return .failure(TableRefusal(TableAPI.error(400, "the body is not valid JSON: \(error)")))
        }
        guard case .object(let object) = value else {
            return .failure(TableRefusal(TableAPI.error(400, "the body must be a JSON object")))
        }
        var fields = JSONObject()
        var id: String?
        var version: String?
        var seen = Set<String>()
        for (key, value) in object.members {
            guard seen.insert(key).inserted else {
                return .failure(TableRefusal(TableAPI.error(400, "the member '\(key)' is given twice")))
            }
            if key == "id" {
                guard case .string(let s) = value else {
                    if value == .null { continue }
                    return .failure(TableRefusal(TableAPI.error(400, "id must be a string")))
                }
                id = s
            } else if let property = wire.systemProperty(named: key) {
                if property == .version, case .string(let s) = value { version = s }
            } else if wire.version == .v1, key.hasPrefix("__") {
                return .failure(TableRefusal(TableAPI.error(400, "'\(key)' is not a system property")))
            } else {
                fields.members.append((key: key, value: value))
            }
        }
        return .success((fields, id, version))
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

    func lookup(_ id: String) async -> Reply {
        let row: TableRow?
        do { row = try await storage.row(table.name, id: id, owner: owner) } catch { return failure(error) }
        guard let row else { return TableAPI.error(404, "The item does not exist") }
        if row.deleted, !includeDeleted {
            return wire.version == .v3
                ? TableAPI.error(410, "The item is deleted") : TableAPI.error(404, "The item does not exist")
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
        let parsed: (fields: JSONObject, id: String?, version: String?)
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

    /// The expected version of a write: `If-Match` (a mismatch is a 412), else the body's
    /// version (a mismatch is a 409, the v2 servers' rule), else none.
    private func expectation(bodyVersion: String?) -> (version: Int64?, fromHeader: Bool) {
        if let header = ifMatch() { return (header ?? nil, true) }
        if let bodyVersion { return (TableRow.version(from: bodyVersion) ?? -1, false) }
        return (nil, false)
    }

    private func conditional(_ fromHeader: Bool, _ error: TableStorageError) -> Reply {
        guard error.code == .versionMismatch, let current = error.current else { return failure(error) }
        return rowReply(current, status: fromHeader ? 412 : 409)
    }

    /// A write to an existing row, answered by `success` or as a conditional write fails.
    private func conditionalWrite(
        _ id: String, _ kind: TableWrite.Kind, expected: (version: Int64?, fromHeader: Bool), status: Int,
        success: @escaping @Sendable (TableRow) -> Reply
    ) -> PreparedWrite {
        let write = TableWrite(
            table: table.name, id: id, kind: kind, expectedVersion: expected.version, owner: owner,
            idempotency: idempotency(status: status))
        return .write(write) { [self] result in
            switch result {
            case .success(let row): return success(row)
            case .failure(let error): return conditional(expected.fromHeader, error)
            }
        }
    }

    func update(_ id: String, replace: Bool) -> PreparedWrite {
        let parsed: (fields: JSONObject, id: String?, version: String?)
        switch parseBody() {
        case .failure(let refusal): return .reply(refusal.reply)
        case .success(let p): parsed = p
        }
        if let bodyID = parsed.id, bodyID != id {
            return .reply(TableAPI.error(400, "the body's id '\(bodyID)' is not the id in the path"))
        }
        let kind = TableWrite.Kind.update(
            fields: parsed.fields, replace: replace, allowDeleted: wire.version != .v3 || includeDeleted)
        return conditionalWrite(id, kind, expected: expectation(bodyVersion: parsed.version), status: 200) {
            [self] row in rowReply(row)
        }
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
        var rowQuery = TableRowQuery(top: api.configuration.pageSize)
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
        var top: Int?
        if let text = parameter("$top") {
            guard let n = Int(text), n >= 0 else {
                return TableAPI.error(400, "$top must be a whole number, 0 or more")
            }
            guard n <= api.configuration.maxTop else {
                return TableAPI.error(400, "You cannot request more than \(api.configuration.maxTop) records")
            }
            top = n
        }
        let select = parameter("$select").map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        rowQuery.skip = skip
        // One row more than a page, to know whether another page follows.
        rowQuery.top = (top ?? api.configuration.pageSize) + (top == nil ? 1 : 0)
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
        if top == nil, rows.count > api.configuration.pageSize {
            rows.removeLast(rows.count - api.configuration.pageSize)
            next = nextLink(path: path, skip: skip + rows.count)
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
            writer.beginObject()
            writer.key("items")
            items()
            if let count = result.count {
                writer.key("count")
                writer.number(count)
            }
            if let next {
                writer.key("nextLink")
                writer.string(next)
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
            if let next { reply.headers.append(("Link", "<\(next)>; rel=next")) }
        }
        reply.body = writer.bytes
        return reply
    }

    /// This request's URL with `$skip` set to `skip`: every other parameter as it came.
    private func nextLink(path: String, skip: Int) -> String {
        var items: [String] = []
        for (key, value) in query.sorted(by: { $0.key < $1.key }) where key.lowercased() != "$skip" {
            items.append(TableQueryPath.encode(key) + "=" + TableQueryPath.encode(value))
        }
        items.append("$skip=\(skip)")
        return baseURL + path + "?" + items.joined(separator: "&")
    }
}

/// Paths and query strings as the table server writes them in `Location` and next links.
enum TableQueryPath {
    static func rowPath(_ table: String, _ id: String) -> String { "/tables/" + encode(table) + "/" + encode(id) }

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
