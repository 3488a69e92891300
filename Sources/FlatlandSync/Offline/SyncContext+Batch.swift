import Flatland
import FlatlandHTTP
import FlatlandJSON
import Synchronization

/// How a push sends the queue.
public struct PushOptions: Sendable, Hashable {
    /// Whether operations go in batches (`POST /tables/$batch`).
    public enum Batching: String, Sendable, Hashable, CaseIterable {
        /// In batches when the server advertises them (`GET /tables/$capabilities`, asked once
        /// per context); one request per operation otherwise (an Azure server answers 404 there).
        case automatic
        /// One request per operation, always.
        case never
    }

    /// Batches or not (``Batching/automatic`` by default).
    public var batching: Batching
    /// The most operations in one batch (``defaultBatchSize`` by default; never more than the
    /// server takes).
    public var batchSize: Int

    /// 300 operations: a batch costs a round trip whatever its size, and on a phone's network the
    /// round trip is most of it (at 100 ms, batches of 100 cap a push at 1,000 operations a
    /// second). 300 inserts make a request of about 50 KB and one server transaction of a few
    /// milliseconds; a batch lost on the network is replayed whole under its keys.
    public static let defaultBatchSize = 300

    /// Options; every argument has a default.
    public init(batching: Batching = .automatic, batchSize: Int = PushOptions.defaultBatchSize) {
        self.batching = batching
        self.batchSize = batchSize
    }
}

/// What a server offers beyond the table protocol (`GET /tables/$capabilities`).
struct ServerCapabilities: Sendable, Hashable {
    /// The most operations a batch takes; nil: no batches.
    var maxBatchOperations: Int?
}

/// One operation's answer, received in a batch: as a single response would have been.
struct BatchAnswer: Sendable {
    /// Its status.
    var status: Int
    /// The body the single response would have had: the row, or the error.
    var body: [UInt8]
    /// Whether the operation had been sent before this batch (its answer may have been lost).
    var wasAttempted: Bool
}

/// What one request of a push came back with.
struct PushAnswer: Sendable {
    var status: Int
    /// Whether a body was committed with it (false for a 204).
    var committed: Bool
}

extension SyncContext {
    /// The server's capabilities, asked once per context; nil when they cannot be known now
    /// (the network, a 401: the push will meet the same on its first operation).
    func capabilities() async -> ServerCapabilities? {
        if let known = capabilityCache.withLock({ $0 }) { return known }
        let seen = Mutex<Int?>(nil)
        var options = engine(for: "$capabilities").ingestOptions
        options.resolver = RuleResolver([
            RuleResolver.Rule(prefix: "flatland-capabilities", idKey: "maxOperations", parentKeys: ["batch"])
        ])
        options.updatesEndpointCollection = false
        options.condition = { entity in
            if case .number(let n)? = (entity.untypedFields ?? entity.fields)["maxOperations"],
                let value = try? n.integer(as: Int.self)
            {
                seen.withLock { $0 = value }
            }
            return false
        }
        let known: ServerCapabilities
        do {
            _ = try await session.send(.get, "/tables/$capabilities", ingestOptions: options)
            known = ServerCapabilities(maxBatchOperations: seen.withLock { $0 })
        } catch {
            // 404 (Azure) or 405: no batches here. Anything else is not an answer.
            guard error.code == .status, error.status == 404 || error.status == 405 else { return nil }
            known = ServerCapabilities(maxBatchOperations: nil)
        }
        capabilityCache.withLock { $0 = known }
        return known
    }

    /// The largest batch this push sends, or nil for one request per operation.
    func batchLimit(_ options: PushOptions, operations: Int) async -> Int? {
        guard options.batching == .automatic, options.batchSize > 1, operations > 1,
            let max = await capabilities()?.maxBatchOperations, max > 1
        else { return nil }
        return min(options.batchSize, max)
    }

    /// Whether an operation can go in a batch: all but the insert of a row with a local id,
    /// whose answer renames the row everywhere (sent on its own, in its place).
    static func batchable(_ operation: SyncOperation) -> Bool {
        !(operation.kind == .insert && LocalID.isLocal(operation.itemID))
    }

    /// One operation's request, as a single push would send it; nil when the local row is gone.
    struct OperationRequest: Sendable {
        var method: HTTPMethod
        /// The row's id in the path (nil for an insert).
        var pathID: String?
        var body: [UInt8]?
        var ifMatch: String?
    }

    func request(for operation: SyncOperation, engine: TableEngine) throws(TableError<JSONObject>) -> OperationRequest?
    {
        switch operation.kind {
        case .insert, .update:
            guard let local = engine.row(engine.storeID(operation.itemID)) else { return nil }
            let data = OfflineTable.data(local)
            // A row made offline in a table whose server names rows: its local id is not sent.
            let localID = operation.kind == .insert && LocalID.isLocal(operation.itemID)
            let body = try engine.body(id: localID ? nil : operation.itemID, keys: data.keys) { writer in
                for (key, value) in data {
                    writer.key(key)
                    writer.value(value)
                }
            }
            let method: HTTPMethod = operation.kind == .insert ? .post : engine.version == .v3 ? .put : .patch
            return OperationRequest(
                method: method, pathID: operation.kind == .insert ? nil : operation.itemID, body: body,
                ifMatch: operation.kind == .update ? operation.version.map(TableVersionHeader.quoted) : nil)
        case .delete:
            return OperationRequest(
                method: .delete, pathID: operation.itemID, body: nil,
                ifMatch: operation.version.map(TableVersionHeader.quoted))
        }
    }

    /// Sends `operations` (each read before and marked attempted) in one `POST /tables/$batch`:
    /// each one's answer by its key, or why the batch as a whole failed.
    func sendBatch(_ operations: [SyncOperation]) async -> Result<[String: BatchAnswer], TableError<JSONObject>> {
        var body: [UInt8] = Array(#"{"operations":["#.utf8)
        var wasAttempted: [String: Bool] = [:]
        for (index, operation) in operations.enumerated() {
            let engine = engine(for: operation.table)
            let request: OperationRequest?
            do { request = try self.request(for: operation, engine: engine) } catch { return .failure(error) }
            // A row gone since it was read: its operation goes alone, which records why.
            guard let request else { continue }
            wasAttempted[operation.key] = operation.state == .attempted
            if index > 0, body.last != UInt8(ascii: "[") { body.append(UInt8(ascii: ",")) }
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("key")
            writer.string(operation.key)
            writer.key("method")
            writer.string(request.method.rawValue)
            writer.key("table")
            writer.string(operation.table)
            if let id = request.pathID {
                writer.key("id")
                writer.string(id)
            }
            if let ifMatch = request.ifMatch {
                writer.key("ifMatch")
                writer.string(ifMatch)
            }
            body += writer.bytes
            if let row = request.body {
                body += Array(#","body":"#.utf8)
                body += row
            }
            body.append(UInt8(ascii: "}"))
        }
        body += Array("]}".utf8)
        let results = Mutex<[JSONObject]>([])
        let probe = engine(for: operations.first?.table ?? "")
        var options = probe.ingestOptions
        options.resolver = RuleResolver([
            RuleResolver.Rule(prefix: "flatland-batch", idKey: "key", parentKeys: ["results"])
        ])
        options.envelope = .results
        options.updatesEndpointCollection = false
        options.condition = { entity in
            if let fields = entity.untypedFields { results.withLock { $0.append(fields) } }
            return false
        }
        // v1 names the system properties it wants in the query: the batch asks as each request would.
        let query: String
        do { query = try probe.systemPropertiesQuery() } catch { return .failure(error) }
        do {
            _ = try await session.send(
                .post, "/tables/$batch" + query, body: body, headers: ["Content-Type": "application/json"],
                ingestOptions: options)
        } catch {
            return .failure(probe.mapped(error))
        }
        var answers: [String: BatchAnswer] = [:]
        for result in results.withLock({ $0 }) {
            guard case .string(let key)? = result["key"], case .number(let n)? = result["status"],
                let status = try? n.integer(as: Int.self), let attempted = wasAttempted[key]
            else { continue }
            var bytes: [UInt8] = []
            if case .object(let item)? = result["item"] {
                bytes = JSONValue.object(item).jsonBytes
            } else if case .string(let message)? = result["error"] {
                bytes = JSONValue.object(["error": .string(message)]).jsonBytes
            }
            answers[key] = BatchAnswer(status: status, body: bytes, wasAttempted: attempted)
        }
        return .success(answers)
    }

    /// Sends one request of a push, or takes its answer from a batch: either way the answer goes
    /// through the same ingest, commit plan and error mapping.
    func exchange(
        _ engine: TableEngine, _ method: HTTPMethod, _ path: String, body: [UInt8]?, headers: HTTPHeaders,
        condition: (@Sendable (IncomingEntity) -> Bool)?,
        commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)?,
        prepared: BatchAnswer?
    ) async throws(TableError<JSONObject>) -> PushAnswer {
        guard let prepared else {
            let result = try await engine.send(
                method, path, body: body, headers: headers, condition: condition, commitPlan: commitPlan)
            return PushAnswer(status: result.status, committed: result.ingest != nil)
        }
        guard (200..<300).contains(prepared.status) else {
            throw engine.mapped(
                HTTPError(
                    .status, "the server answered \(prepared.status)", method: method, endpoint: path,
                    status: prepared.status, body: prepared.body))
        }
        guard !prepared.body.isEmpty else { return PushAnswer(status: prepared.status, committed: false) }
        var options = engine.ingestOptions
        if let condition { options.condition = condition }
        // A write's answer, not a listing of its path (as `TableEngine.send` takes it).
        options.updatesEndpointCollection = false
        let batch: IngestBatch
        do throws(IngestError) {
            let ingestor = engine.store.makeIngestor(endpoint: path, options: options)
            try ingestor.feed(prepared.body)
            batch = try ingestor.finish()
        } catch {
            throw engine.mapped(Self.httpError(error, method: method, path: path, status: prepared.status))
        }
        var plan = ResponseCommit()
        if let commitPlan {
            do {
                plan = try commitPlan(batch)
            } catch {
                throw engine.mapped(
                    HTTPError(
                        .persistence, "the response's commit plan failed: \(error)", method: method, endpoint: path,
                        status: prepared.status, underlying: "\(error)"))
            }
        }
        do throws(IngestError) {
            try engine.store.commit(batch, removing: plan.removing, alongside: plan.alongside)
        } catch {
            throw engine.mapped(Self.httpError(error, method: method, path: path, status: prepared.status))
        }
        return PushAnswer(status: prepared.status, committed: true)
    }

    /// A failed ingest of an answer from a batch, as the backend reports one of a single answer.
    private static func httpError(_ error: IngestError, method: HTTPMethod, path: String, status: Int) -> HTTPError {
        let code: HTTPError.Code =
            error.code == .persistence ? .persistence : error.code == .cancelled ? .cancelled : .decoding
        let message =
            code == .persistence
            ? "the response could not be stored: \(error)" : "the response could not be read: \(error)"
        return HTTPError(code, message, method: method, endpoint: path, status: status, ingest: error)
    }
}
