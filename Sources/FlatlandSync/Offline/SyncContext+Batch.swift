import Flatland
import FlatlandHTTP
import FlatlandJSON
import Foundation

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
    /// The longest one request of the push may take (a write, a `$batch`, the `GET` that checks
    /// a row after a lost answer, `$capabilities`), from sending it to its answer's last byte,
    /// in seconds (``PullOptions/defaultRequestDeadline`` by default, as a pull's pages). A
    /// server that does not answer in time is cut there: the operation stays attempted, its
    /// answer lost, and the push stops (as on a dropped connection); the next push checks it.
    /// The session's `Backend.Configuration.timeout` separately cuts an answer that stops.
    public var requestDeadline: TimeInterval

    /// 300 operations: a batch costs a round trip whatever its size, and on a phone's network the
    /// round trip is most of it (at 100 ms, batches of 100 cap a push at 1,000 operations a
    /// second). 300 inserts make a request of about 50 KB and one server transaction of a few
    /// milliseconds; a batch lost on the network is replayed whole under its keys.
    public static let defaultBatchSize = 300

    /// Options; every argument has a default.
    public init(
        batching: Batching = .automatic, batchSize: Int = PushOptions.defaultBatchSize,
        requestDeadline: TimeInterval = PullOptions.defaultRequestDeadline
    ) {
        self.batching = batching
        self.batchSize = batchSize
        self.requestDeadline = requestDeadline
    }
}

/// What a server offers beyond the table protocol (`GET /tables/$capabilities`).
struct ServerCapabilities: Sendable, Hashable {
    /// The most operations a batch takes; nil: no batches.
    var maxBatchOperations: Int?
    /// Whether the server remembers `Idempotency-Key` and answers a replayed write with its
    /// first answer (`{"idempotency":{…}}`): a lost insert can then be sent again.
    var idempotencyKeys = false
}

/// One operation's answer, received in a batch: as a single response would have been.
struct BatchAnswer: Sendable {
    /// Its status.
    var status: Int
    /// The row the server answered with (a 2xx to an insert or an update).
    var row: JSONObject?
    /// The error body the single response would have had.
    var errorBody: [UInt8]
}

extension SyncContext {
    /// The server's capabilities, asked once per context; nil when they cannot be known now
    /// (the network, a 401, no answer within `deadline` seconds: the push will meet the same on
    /// its first operation).
    func capabilities(deadline: TimeInterval = PullOptions.defaultRequestDeadline) async -> ServerCapabilities? {
        if let known = capabilityCache.withLock({ $0 }) { return known }
        var known = ServerCapabilities(maxBatchOperations: nil)
        let session = self.session
        let asked = await RequestDeadline.run(deadline) { () async -> Result<HTTPResult, HTTPError> in
            do throws(HTTPError) {
                return .success(try await session.send(.get, "/tables/$capabilities", consuming: .json(limit: 1 << 20)))
            } catch {
                return .failure(error)
            }
        }
        guard case .finished(let answer) = asked else { return nil }
        do {
            let result = try answer.get()
            if case .object(let capabilities)? = result.json {
                if case .object(let batch)? = capabilities["batch"], case .number(let n)? = batch["maxOperations"] {
                    known.maxBatchOperations = try? n.integer(as: Int.self)
                }
                if case .object? = capabilities["idempotency"] { known.idempotencyKeys = true }
            }
        } catch {
            // 404 (Azure) or 405: neither batches nor keys. Anything else is not an answer.
            guard error.code == .status, error.status == 404 || error.status == 405 else { return nil }
        }
        capabilityCache.withLock { $0 = known }
        return known
    }

    /// The largest batch this push sends, or nil for one request per operation.
    func batchLimit(_ options: PushOptions, operations: Int) async -> Int? {
        guard options.batching == .automatic, options.batchSize > 1, operations > 1,
            let max = await capabilities(deadline: options.requestDeadline)?.maxBatchOperations, max > 1
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

    ///
    /// - Parameter row: the row to send instead of the local one (an insert's data as it was sent
    ///   before, when the local row is gone).
    func request(for operation: SyncOperation, engine: TableEngine, row: JSONObject? = nil)
        throws(TableError<JSONObject>) -> OperationRequest?
    {
        switch operation.kind {
        case .insert, .update:
            guard let local = row ?? engine.row(engine.storeID(operation.itemID)) else { return nil }
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

    /// Sends `operations` (each read before and marked sending) in one `POST /tables/$batch`:
    /// each one's answer by its key, or why the batch as a whole failed. The answer is read as
    /// JSON (``ResponseConsumption/json(limit:)``), never through the store.
    /// A batch with no answer within `deadline` seconds fails as one whose connection dropped
    /// (a transport error): its operations' answers are lost. With `resendable` (no operation of
    /// it can be applied twice: ``resendCannotDuplicate(_:deadline:)``), a batch whose connection
    /// closed before any answer is sent again once, at once; `resent` then says so (its answers
    /// are a replay's).
    func sendBatch(_ operations: [SyncOperation], deadline: TimeInterval, resendable: Bool) async -> Result<
        (answers: [String: BatchAnswer], resent: Bool), TableError<JSONObject>
    > {
        var body: [UInt8] = Array(#"{"operations":["#.utf8)
        var sent: Set<String> = []
        for operation in operations {
            let engine = engine(for: operation.table)
            let request: OperationRequest?
            // The data kept when it was marked sending (a replay's: its first send's); a row
            // deleted locally since sends nothing, and its operation goes alone.
            // (Whether the row is there is all that is asked of the store: reading it whole
            // built a JSON object per operation for nothing.)
            let row = engine.store.contains(engine.storeID(operation.itemID)) ? operation.sentRow : nil
            do { request = try self.request(for: operation, engine: engine, row: row) } catch {
                return .failure(error)
            }
            // A row gone since it was read: its operation goes alone, which records why.
            guard let request else { continue }
            sent.insert(operation.key)
            if body.last != UInt8(ascii: "[") { body.append(UInt8(ascii: ",")) }
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
        let probe = engine(for: operations.first?.table ?? "")
        // v1 names the system properties it wants in the query: the batch asks as each request would.
        let query: String
        do { query = try probe.systemPropertiesQuery() } catch { return .failure(error) }
        var answer: HTTPResult?
        let session = self.session
        let batch = body
        var resent = false
        while answer == nil {
            let exchanged = await RequestDeadline.run(deadline) { () async -> Result<HTTPResult, HTTPError> in
                do throws(HTTPError) {
                    return .success(
                        try await session.send(
                            .post, "/tables/$batch" + query, body: batch, headers: ["Content-Type": "application/json"],
                            consuming: .json()))
                } catch {
                    return .failure(error)
                }
            }
            switch exchanged {
            case .finished(.success(let result)):
                answer = result
            case .finished(.failure(let error)):
                guard error.code == .transport, resendable, !resent, !Task.isCancelled else {
                    return .failure(probe.mapped(error))
                }
                resent = true
            case .passed:
                return .failure(
                    probe.mapped(
                        HTTPError(
                            .transport,
                            "the batch of \(operations.count) operations had no answer within its deadline of \(deadline) s",
                            method: .post, endpoint: "/tables/$batch")))
            }
        }
        guard case .object(let envelope)? = answer?.json, case .array(let results)? = envelope["results"] else {
            return .failure(probe.failure(.invalidResponse, "the batch's answer has no results"))
        }
        var answers: [String: BatchAnswer] = [:]
        for case .object(let result) in results {
            guard case .string(let key)? = result["key"], sent.contains(key), case .number(let n)? = result["status"],
                let status = try? n.integer(as: Int.self)
            else { continue }
            var row: JSONObject?
            var errorBody: [UInt8] = []
            if case .object(let item)? = result["item"] {
                if (200..<300).contains(status) { row = item } else { errorBody = JSONValue.object(item).jsonBytes }
            } else if case .string(let message)? = result["error"] {
                errorBody = JSONValue.object(["error": .string(message)]).jsonBytes
            }
            answers[key] = BatchAnswer(status: status, row: row, errorBody: errorBody)
        }
        return .success((answers, resent))
    }
}
