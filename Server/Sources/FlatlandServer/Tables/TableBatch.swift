import Flatland
import FlatlandJSON

/// `GET /tables/$capabilities` and `POST /tables/$batch`: what this server offers beyond the
/// table protocol, and many writes in one request (see <doc:ServingTables>).
extension TableAPI {
    /// One operation of a batch, as read from its body.
    struct BatchOperation {
        var key: String?
        var method: String
        var table: String
        var id: String?
        var body: [UInt8]
        var ifMatch: String?
    }

    /// `$capabilities` or `$batch`: the caller must be one the least guarded table admits
    /// (`$batch` then admits each operation against its own table).
    func special(
        _ name: String, method: String, query: [String: String], headers: [String: String], body: [UInt8],
        baseURL: String, caller: SampleAPI.Caller, faults: (any TableFaultHook)? = nil
    ) async -> Reply {
        let open = configuration.tables.map(\.access).min { Self.rank($0) < Self.rank($1) } ?? .anonymous
        if case .failure(let refusal) = Self.admit(caller, to: TableDefinition(name: name, access: open)) {
            return refusal.reply
        }
        switch (name, method) {
        case ("$capabilities", "GET"):
            return capabilities()
        case ("$batch", "POST"):
            let wire: TableWire
            switch protocolVersion(query: query, headers: headers) {
            case .failure(let refusal): return refusal.reply
            case .success(let w): wire = w
            }
            return await batch(
                body, wire: wire, query: query, headers: headers, baseURL: baseURL, caller: caller, faults: faults)
        default:
            return Self.error(405, "\(method) is not allowed on /tables/\(name)")
        }
    }

    /// The header a batch's reply carries (and the host removes) when one of its operations took
    /// an injected lost response: the whole answer is lost.
    static let loseResponseMarker = "X-Flatland-Lose-Response"

    private static func rank(_ access: TableAccess) -> Int {
        switch access {
        case .anonymous: 0
        case .authenticated: 1
        case .perUser: 2
        }
    }

    /// `{"batch":{"maxOperations":N},"idempotency":{"ttlSeconds":T,"maxKeysPerCaller":K,"maxRowBytes":B}}`.
    private func capabilities() -> Reply {
        let ttl = configuration.idempotencyTTL.components
        let seconds = Double(ttl.seconds) + Double(ttl.attoseconds) / 1e18
        let ttlNumber = JSONNumber(seconds.rounded() == seconds ? "\(Int64(seconds))" : "\(seconds)") ?? 0
        let value: JSONValue = [
            "batch": ["maxOperations": .number(JSONNumber(configuration.maxBatchOperations))],
            "idempotency": [
                "ttlSeconds": .number(ttlNumber),
                "maxKeysPerCaller": .number(JSONNumber(configuration.idempotencyMaxKeysPerCaller)),
                "maxRowBytes": .number(JSONNumber(configuration.idempotencyMaxRowBytes)),
            ],
        ]
        return Reply(status: 200, body: value.jsonBytes)
    }

    /// The members an operation of a batch may have.
    private static let batchOperationMembers: Set<String> = ["key", "method", "table", "id", "body", "ifMatch"]

    /// Reads a batch's body: every operation, or the 400 (naming the operation) or 413 that
    /// refuses the whole batch before anything is applied.
    func batchOperations(_ body: [UInt8]) -> Result<[BatchOperation], TableRefusal> {
        func refuse(_ status: Int, _ message: String) -> Result<[BatchOperation], TableRefusal> {
            .failure(TableRefusal(Self.error(status, message)))
        }
        guard let value = try? JSONValue(parsing: body), case .object = value else {
            return refuse(400, "a batch is a JSON object {\"operations\":[…]}")
        }
        // A member given twice anywhere (a second "method", a second "operations") or a NUL
        // refuses the whole batch: nothing is applied.
        if let problem = TableBody.problem(in: value) { return refuse(400, "the batch: \(problem)") }
        guard case .array(let items)? = value["operations"] else {
            return refuse(400, "a batch needs an 'operations' array")
        }
        guard items.count <= configuration.maxBatchOperations else {
            return refuse(
                413, "a batch takes at most \(configuration.maxBatchOperations) operations, not \(items.count)")
        }
        var operations: [BatchOperation] = []
        for (index, item) in items.enumerated() {
            let at = "operation \(index)"
            guard case .object(let object) = item else { return refuse(400, "\(at) is not a JSON object") }
            if let other = object.members.first(where: { !Self.batchOperationMembers.contains($0.key) }) {
                return refuse(400, "\(at): unknown member '\(other.key)'")
            }
            func text(_ name: String) -> Result<String?, TableRefusal> {
                switch object[name] {
                case nil, .null?: return .success(nil)
                case .string(let s)?: return .success(s)
                default: return .failure(TableRefusal(Self.error(400, "\(at): '\(name)' must be a string")))
                }
            }
            var strings: [String: String] = [:]
            for name in ["key", "method", "table", "id", "ifMatch"] {
                switch text(name) {
                case .failure(let refusal): return .failure(refusal)
                case .success(let s): strings[name] = s
                }
            }
            guard let method = strings["method"], ["POST", "PATCH", "PUT", "DELETE"].contains(method) else {
                return refuse(400, "\(at): 'method' must be POST, PATCH, PUT or DELETE")
            }
            guard let table = strings["table"], !table.isEmpty else { return refuse(400, "\(at): 'table' is missing") }
            if method != "POST", strings["id"] == nil { return refuse(400, "\(at): \(method) needs an 'id'") }
            if let id = strings["id"], let problem = Self.idProblem(id) { return refuse(400, "\(at): \(problem)") }
            if let problem = Self.idempotencyKeyProblem(strings["key"]) { return refuse(400, "\(at): \(problem)") }
            var bytes: [UInt8] = []
            switch object["body"] {
            case nil, .null?:
                if method != "DELETE" { return refuse(400, "\(at): \(method) needs a 'body' object") }
            case .object(let fields)?:
                bytes = JSONValue.object(fields).jsonBytes
            default:
                return refuse(400, "\(at): 'body' must be a JSON object")
            }
            operations.append(
                BatchOperation(
                    key: strings["key"], method: method, table: table, id: strings["id"], body: bytes,
                    ifMatch: strings["ifMatch"]))
        }
        return .success(operations)
    }

    /// Applies each operation on its own, in order, as its single request would be (all of them
    /// in one transaction of the storage), and answers
    /// `{"results":[{"key","status","etag","item"|"error","replayed"}…]}`.
    private func batch(
        _ body: [UInt8], wire: TableWire, query: [String: String], headers: [String: String], baseURL: String,
        caller: SampleAPI.Caller, faults: (any TableFaultHook)?
    ) async -> Reply {
        let operations: [BatchOperation]
        switch batchOperations(body) {
        case .failure(let refusal): return refusal.reply
        case .success(let o): operations = o
        }
        // Every operation's table must admit the caller before anything is applied.
        var owners: [String?] = []
        for operation in operations {
            guard let table = tables[operation.table.lowercased()] else {
                owners.append(nil)
                continue
            }
            switch Self.admit(caller, to: table) {
            case .failure(let refusal): return refusal.reply
            case .success(let owner): owners.append(owner)
            }
        }
        var base = headers
        base["if-match"] = nil
        base["idempotency-key"] = nil
        // Each operation's write, or the reply that refuses it; the writes then go to the
        // storage together: one transaction, each write on its own in it.
        var replies: [Reply?] = []
        var writes: [TableWrite] = []
        var answers: [(index: Int, answer: @Sendable (Result<TableRow, TableStorageError>) -> Reply)] = []
        var loseResponse = false
        for (operation, owner) in zip(operations, owners) {
            guard let table = tables[operation.table.lowercased()] else {
                replies.append(Self.error(404, "no table '\(operation.table)'"))
                continue
            }
            var opHeaders = base
            opHeaders["if-match"] = operation.ifMatch
            opHeaders["idempotency-key"] = operation.key
            let request = TableRequest(
                api: self, table: table, wire: wire, query: query, headers: opHeaders, body: operation.body,
                baseURL: baseURL, owner: owner, method: operation.method, id: operation.id, scope: Self.scope(caller))
            // A fault injected for the operation's own request (tests): it takes it here.
            switch faults?.take(method: operation.method, path: request.rowPath, naming: nil) {
            case .fail(let status, _)?:
                replies.append(Self.error(status, "injected failure"))
                continue
            case .delay(let duration)?:
                try? await Task.sleep(for: duration)
            case .loseResponse?, .dropMidBody?:
                loseResponse = true
            case nil:
                break
            }
            switch request.prepareWrite() {
            case .reply(let reply):
                replies.append(reply)
            case .write(let write, let answer):
                answers.append((replies.count, answer))
                writes.append(write)
                replies.append(nil)
            }
        }
        let applied = await storage.apply(writes)
        for ((index, answer), result) in zip(answers, applied) { replies[index] = answer(result) }
        let results = zip(operations, replies).map { operation, reply in
            Self.result(reply ?? Self.error(500, "the storage answered no write"), key: operation.key)
        }
        var reply = Reply(status: 200, body: JSONValue.object(["results": .array(results)]).jsonBytes)
        if loseResponse { reply.headers.append((Self.loseResponseMarker, "1")) }
        return reply
    }

    /// One operation's result: its status, ETag, and the row it answered with (or its error).
    private static func result(_ reply: Reply, key: String?) -> JSONValue {
        var result = JSONObject()
        if let key { result.members.append((key: "key", value: .string(key))) }
        result.members.append((key: "status", value: .number(JSONNumber(reply.status))))
        func header(_ name: String) -> String? {
            reply.headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        if let etag = header("ETag") { result.members.append((key: "etag", value: .string(etag))) }
        if case .object(let object)? = try? JSONValue(parsing: reply.body) {
            if reply.status >= 400, object.members.count == 1, case .string(let message)? = object["error"] {
                result.members.append((key: "error", value: .string(message)))
            } else {
                result.members.append((key: "item", value: .object(object)))
            }
        }
        if header("Idempotent-Replayed") != nil { result.members.append((key: "replayed", value: .bool(true))) }
        return .object(result)
    }
}
