import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import Testing

/// A device: a persistent session in its own directory, and its sync context.
struct Device {
    let session: Session
    let sync: SyncContext
    let directory: String

    init(
        port: Int, protocol version: TableProtocol = .v2, directory: String? = nil, log: RequestLog = RequestLog(),
        timeout: TimeInterval = 60, filters: [any HTTPFilter] = []
    ) throws {
        let directory =
            directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("flatland-device-\(UUID())").path
        self.directory = directory
        let environment = try Environment(
            name: "tables", baseURL: URL(string: "http://127.0.0.1:\(port)")!, allowInsecureHTTP: true)
        var configuration = Backend.Configuration()
        configuration.addTableHeaders(protocol: version)
        configuration.filters += filters
        configuration.filters.append(log.filter)
        configuration.timeout = timeout
        session = try Session(
            user: "device", environment: environment, registry: try EntityRegistry([TodoItem.self]),
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        sync = try SyncContext(
            session: session, options: TableOptions(protocol: version, systemProperties: version == .v1 ? .all : nil))
    }

    func close() async {
        await session.close()
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Asks for a new connection per request (`Connection: close`). A test that loses a response
/// (the server closes the connection without a word) uses it: on a reused connection the client
/// may notice only when its wait times out, and a short timeout fails requests of a loaded
/// machine that are merely slow.
let freshConnections = ClosureFilter { request, next in
    var request = request
    request.headers["Connection"] = "close"
    return try await next(request)
}

/// Two devices on the sample server, closed and removed afterwards.
func withDevices<R>(
    _ serving: TableServing = TableServing(protocols: [.v1, .v2, .v3]),
    _ body: (SampleServer, Device, Device) async throws -> R
) async throws -> R {
    try await withSyncServer(serving) { server, port in
        let one = try Device(port: port)
        let two = try Device(port: port)
        defer {
            one.remove()
            two.remove()
        }
        do {
            let result = try await body(server, one, two)
            await one.close()
            await two.close()
            return result
        } catch {
            await one.close()
            await two.close()
            throw error
        }
    }
}

@Suite("Offline tables: the queue, push and pull against the embedded server")
struct OfflineTests {
    // MARK: The queue

    @Test func localWritesAreAppliedAtOnceAndQueuedAndCollapseInPlace() async throws {
        try await withSyncServer { _, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            let a = try todos.insert(["id": "a", "text": "A"])
            #expect(a.text("text") == "A")
            try todos.insert(["id": "b", "text": "B"])
            try todos.update(["id": "a", "text": "A2"])  // insert + update → one insert
            #expect(todos.lookup("a")?.text("text") == "A2")
            try todos.insert(["id": "c", "text": "C"])
            try todos.delete("c")  // insert + delete → nothing
            #expect(todos.lookup("c") == nil)
            var ops = try device.sync.operations()
            #expect(ops.map(\.itemID) == ["a", "b"])
            #expect(ops.map(\.kind) == [.insert, .insert])
            #expect(ops.first?.changes == 2)

            // Pushed, then update + update → one update; update + delete → a delete in place.
            let pushed = await device.sync.push()
            #expect(pushed.succeeded && pushed.outcomes.map(\.status) == [201, 201])
            #expect(try device.sync.operations().isEmpty)
            let version = try #require(todos.lookup("a")?.text("version"))
            try todos.update(["id": "a", "text": "A3"])
            try todos.update(["id": "b", "text": "B2"])
            try todos.update(["id": "a", "complete": true])
            try todos.delete("b")
            ops = try device.sync.operations()
            #expect(ops.map(\.itemID) == ["a", "b"])
            #expect(ops.map(\.kind) == [.update, .delete])
            #expect(ops.first?.version == version && ops.first?.changes == 2)
            #expect(ops.last?.item?.text("text") == "B2")

            // Anything after a delete, and an insert after an update, are errors that change nothing.
            do throws(SyncError) {
                try todos.insert(["id": "b", "text": "again"])
                Issue.record("an insert after a delete was queued")
            } catch {
                #expect(error.code == .invalidOperation)
            }
            do throws(SyncError) {
                try todos.insert(["id": "a", "text": "again"])
                Issue.record("an insert of an existing row was queued")
            } catch {
                #expect(error.code == .invalidOperation)
            }
            #expect(try device.sync.operations() == ops)
            await device.close()
        }
    }

    @Test func withoutCollapsingEveryChangeIsItsOwnOperationInOrder() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem", collapses: false)
            try todos.insert(["id": "x", "text": "1"])
            try todos.update(["id": "x", "text": "2"])
            try todos.update(["id": "x", "text": "3"])
            #expect(try device.sync.operations().map(\.kind) == [.insert, .update, .update])
            let pushed = await device.sync.push()
            #expect(pushed.outcomes.map(\.status) == [201, 200, 200])
            #expect(pushed.succeeded)
            await device.close()
            _ = server
        }
    }

    @Test func anEditOfAStaleCopyIsRefusedNamingBothVersions() async throws {
        try await withSyncServer { _, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "v", "text": "1"])
            _ = await device.sync.push()
            let current = try #require(todos.lookup("v")?.text("version"))
            do throws(SyncError) {
                try todos.update(["id": "v", "text": "2", "version": "old"])
                Issue.record("a stale edit was queued")
            } catch {
                #expect(error.code == .staleVersion)
                #expect(error.message.contains("old") && error.message.contains(current))
            }
            #expect(try device.sync.operations().isEmpty)
            #expect(todos.lookup("v")?.text("text") == "1")
            try todos.update(["id": "v", "text": "2", "version": .string(current)])
            #expect(try device.sync.operations().first?.version == current)
            await device.close()
        }
    }

    // MARK: Push

    @Test func aNetworkErrorAbortsThePushAndKeepsEveryOperation() async throws {
        let port = try await withSyncServer { _, port in port }  // stopped: nothing listens
        let device = try Device(port: port)
        defer { device.remove() }
        let todos = device.sync.table("todoitem")
        try todos.insert(["id": "n1", "text": "1"])
        try todos.insert(["id": "n2", "text": "2"])
        let pushed = await device.sync.push()
        #expect(pushed.aborted)
        #expect(pushed.outcomes.count == 1)
        let ops = try device.sync.operations()
        #expect(ops.map(\.itemID) == ["n1", "n2"])
        #expect(ops.map(\.state) == [.attempted, .pending])
        await device.close()
    }

    @Test func aReplayedInsertWhoseAnswerWasLostIsASuccessNotADuplicate() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "lost", "text": "once"])
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem", times: 2)
            let first = await device.sync.push()
            #expect(first.aborted)
            #expect(try device.sync.operations().first?.state == .attempted)
            let second = await device.sync.push()
            #expect(second.succeeded)
            // The server remembers the insert's key: the replay gets the first answer, 201.
            #expect(second.outcomes.first?.status == 201 && second.outcomes.first?.result == .ok)
            #expect(try device.sync.operations().isEmpty)
            #expect(todos.lookup("lost")?.text("version") != nil)
            // Exactly one row on the server.
            let reader = try Device(port: port)
            defer { reader.remove() }
            let pulled = try await reader.sync.table("todoitem").pull()
            #expect(pulled.rows == 1)
            await reader.close()
            await device.close()
        }
    }

    @Test func aDeleteOfARowTheServerNoLongerHasIsASuccess() async throws {
        try await withDevices { _, one, two in
            try one.sync.table("todoitem").insert(["id": "gone", "text": "x"])
            _ = await one.sync.push()
            _ = try await two.sync.table("todoitem").pull()
            try one.sync.table("todoitem").delete("gone")
            _ = await one.sync.push()
            try two.sync.table("todoitem").delete("gone")
            let pushed = await two.sync.push()
            #expect(pushed.succeeded)
            #expect(pushed.outcomes.first?.result == .ok)
        }
    }

    @Test(arguments: ["none", "server", "client"])
    func conflictsGoToTheHandler(_ rule: String) async throws {
        try await withDevices { _, one, two in
            let mine = one.sync.table("todoitem")
            let theirs = two.sync.table("todoitem")
            try mine.insert(["id": "c", "text": "base"])
            _ = await one.sync.push()
            _ = try await theirs.pull()
            try theirs.update(["id": "c", "text": "theirs"])
            _ = await two.sync.push()
            try mine.update(["id": "c", "text": "mine"])

            let handler: ConflictHandler? =
                rule == "server" ? ConflictPolicy.serverWins : rule == "client" ? ConflictPolicy.clientWins : nil
            let pushed = await one.sync.push(onConflict: handler)
            #expect(pushed.outcomes.first?.status == (rule == "client" ? 200 : 412))
            switch rule {
            case "none":
                #expect(pushed.outcomes.first?.result == .conflict)
                let failed = try one.sync.failedOperations()
                #expect(failed.first?.status == 412)
                #expect(failed.first?.serverItem?.text("text") == "theirs")
                #expect(mine.lookup("c")?.text("text") == "mine")
            case "server":
                #expect(pushed.outcomes.first?.result == .resolved)
                #expect(try one.sync.operations().isEmpty)
                #expect(mine.lookup("c")?.text("text") == "theirs")
            default:
                #expect(pushed.outcomes.first?.result == .resolved)
                #expect(try one.sync.operations().isEmpty)
                _ = try await theirs.pull()
                #expect(theirs.lookup("c")?.text("text") == "mine")
            }
        }
    }

    // MARK: Pull

    @Test(arguments: [TableProtocol.v1, .v2, .v3])
    func anIncrementalPullBringsOnlyWhatChangedAndRemovesDeletedRows(_ version: TableProtocol) async throws {
        try await withSyncServer { _, port in
            let writer = try Device(port: port, protocol: version)
            let log = RequestLog()
            let reader = try Device(port: port, protocol: version, log: log)
            defer {
                writer.remove()
                reader.remove()
            }
            let source = writer.sync.table("todoitem")
            for i in 0..<120 { try source.insert(["id": .string("r\(i)"), "text": .string("row \(i)")]) }
            #expect(await writer.sync.push().succeeded)

            let target = reader.sync.table("todoitem")
            // The official clients' paging, kept byte for byte as an option.
            let official = PullOptions(paging: .officialClients)
            let first = try await target.pull(queryID: "all", options: official)
            // A raised token reads the rows at a page's boundary again: `ge` (the v2 clients' rule)
            // includes the token's own row, and the filter's dates are written to the
            // millisecond (v3) or 100 ns, so rows in the same millisecond come again. Never fewer.
            #expect((120...124).contains(first.rows), "\(first)")
            // Pages of 50 (v1, v2: the client's), or of the server's 100 (v3).
            #expect(first.pages >= (version == .v3 ? 2 : 3), "\(first)")
            #expect(target.rows().count == 120)
            #expect(first.token != nil)
            // Pages (each with its own filter) leave no endpoint collection behind to grow.
            #expect(reader.session.store.collections(kind: .endpoint).isEmpty)
            let updatedName = version == .v1 ? "__updatedAt" : "updatedAt"
            let filter = try #require(log.requests.first?.url.query)
            #expect(filter.contains("$filter=(\(updatedName)%20\(version == .v3 ? "gt" : "ge")%20"))
            // The first page on the wire, exactly as the official clients send it.
            let wire = try #require(log.requests.first?.url.absoluteString)
            let base = "http://127.0.0.1:\(port)/tables/todoitem?"
            switch version {
            case .v1:
                #expect(
                    wire.hasPrefix(
                        base + "$filter=(__updatedAt%20ge%20datetimeoffset'1970-01-01T00%3A00%3A00.0000000%2B00%3A00')"
                            + "&$orderby=__updatedAt&$skip=0&$top=50&__includeDeleted=true&__systemproperties="))
            case .v2:
                #expect(
                    wire == base
                        + "$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00:00:00.0000000%2B00:00')"
                        + "&$orderby=updatedAt&$skip=0&$top=50&__includeDeleted=true")
            case .v3:
                #expect(
                    wire == base
                        + "$filter=(updatedAt%20gt%20cast(1970-01-01T00:00:00.000Z,Edm.DateTimeOffset))"
                        + "&$orderby=updatedAt&$count=true&__includedeleted=true")
            }

            // The rows written in the last millisecond the first pull brought come again (a batch
            // writes many rows in one millisecond); nothing else but the two changed.
            func millisecond(_ row: JSONObject) -> Substring? {
                guard case .string(let text)? = row[updatedName] else { return nil }
                return text.prefix(23)
            }
            let last = target.rows().compactMap(millisecond).max()
            let sameMillisecond = target.rows().filter { millisecond($0) == last }.count
            try source.update(["id": "r5", "text": "changed"])
            try source.delete("r6")
            #expect(await writer.sync.push().succeeded)
            let second = try await target.pull(queryID: "all", options: official)
            #expect(second.rows <= 2 + sameMillisecond, "\(second), \(sameMillisecond) rows in the last millisecond")
            #expect(second.deleted == 1)
            #expect(target.lookup("r5")?.text("text") == "changed")
            #expect(target.lookup("r6") == nil)
            #expect(target.rows().count == 119)
            await writer.close()
            await reader.close()
        }
    }

    /// The default paging, by key: every row once, the second pull exactly what changed, on
    /// the Flatland server in each protocol.
    @Test(arguments: [TableProtocol.v1, .v2, .v3])
    func anIncrementalPullByKeyBringsExactlyWhatChanged(_ version: TableProtocol) async throws {
        try await withSyncServer { _, port in
            let writer = try Device(port: port, protocol: version)
            let log = RequestLog()
            let reader = try Device(port: port, protocol: version, log: log)
            defer {
                writer.remove()
                reader.remove()
            }
            let source = writer.sync.table("todoitem")
            for i in 0..<120 { try source.insert(["id": .string("r\(i)"), "text": .string("row \(i)")]) }
            #expect(await writer.sync.push().succeeded)

            let target = reader.sync.table("todoitem")
            let first = try await target.pull(queryID: "all")
            #expect(first.rows == 120, "\(first)")
            // 0–49, 49–98 and 98–119 (each request after a full page reads its last tick again,
            // which may have grown meanwhile), and the empty page after the key.
            #expect(first.pages == 4, "\(first)")
            #expect(target.rows().count == 120)
            #expect(first.tokenID != nil)
            let updatedName = version == .v1 ? "__updatedAt" : "updatedAt"
            let second = try #require(log.requests.dropFirst().first?.url.query)
            #expect(second.contains("$filter=(\(updatedName)%20ge%20") && !second.contains("id%20gt%20"), "\(second)")
            #expect(second.contains("$orderby=\(updatedName)"))

            try source.update(["id": "r5", "text": "changed"])
            try source.delete("r6")
            #expect(await writer.sync.push().succeeded)
            let again = try await target.pull(queryID: "all")
            #expect(again.rows == 2, "\(again)")
            #expect(again.deleted == 1)
            #expect(target.lookup("r5")?.text("text") == "changed")
            #expect(target.lookup("r6") == nil)
            #expect(target.rows().count == 119)
            await writer.close()
            await reader.close()
        }
    }

    @Test func aPullPushesTheTablesQueuedChangesFirst() async throws {
        try await withDevices { _, one, two in
            try one.sync.table("todoitem").insert(["id": "p", "text": "server"])
            _ = await one.sync.push()
            let local = two.sync.table("todoitem")
            _ = try await local.pull(queryID: "q")
            try local.insert(["id": "mine", "text": "local"])
            let pulled = try await local.pull(queryID: "q")
            // The pull pushed the pending insert first.
            #expect(try two.sync.operations().isEmpty)
            #expect(pulled.rows >= 1)
        }
    }

    @Test func aPageCutMidBodyLeavesTheTokenAtTheLastWholePageAndTheNextPullFinishes() async throws {
        try await withDevices { server, writer, reader in
            let source = writer.sync.table("todoitem")
            for i in 0..<150 { try source.insert(["id": .string(String(format: "k%03d", i)), "text": "x"]) }
            #expect(await writer.sync.push().succeeded)
            let target = reader.sync.table("todoitem")
            // The second page's body is cut.
            server.tableFaults.inject(.delay(.zero), method: "GET")
            server.tableFaults.inject(.dropMidBody(afterBytes: nil), method: "GET")
            do throws(SyncError) {
                _ = try await target.pull(queryID: "cut")
                Issue.record("a cut page went unnoticed")
            } catch {
                #expect(error.code == .http)
            }
            #expect(target.rows().count == 50)
            let resumed = try await target.pull(queryID: "cut")
            #expect(target.rows().count == 150)
            #expect(resumed.rows >= 100)
        }
    }

    @Test func purgeIsRefusedWithPendingOperationsUnlessForced() async throws {
        try await withSyncServer { _, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "z", "text": "z"])
            do throws(SyncError) {
                try todos.purge()
                Issue.record("a purge dropped a pending change")
            } catch {
                #expect(error.code == .pendingOperations)
            }
            #expect(todos.lookup("z") != nil)
            try todos.purge(force: true)
            #expect(todos.lookup("z") == nil)
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }
}

@Suite("Offline tables: rows hard-deleted on the server")
struct ReconcileTests {
    @Test(arguments: ReconcileMethod.allCases)
    func reconcileRemovesRowsTheServerNoLongerHasButNotPendingOnes(_ method: ReconcileMethod) async throws {
        let serving = TableServing(
            tables: [TableDefinition(name: "todoitem"), TableDefinition(name: "hard", softDelete: false)],
            protocols: [.v2, .v3])
        try await withDevices(serving) { _, writer, reader in
            let source = writer.sync.table("hard")
            for i in 0..<5 { try source.insert(["id": .string("h\(i)"), "text": "x"]) }
            #expect(await writer.sync.push().succeeded)
            let target = reader.sync.table("hard")
            _ = try await target.pull(queryID: "all")
            #expect(target.rows().count == 5)
            try source.delete("h1")
            try source.delete("h2")
            #expect(await writer.sync.push().succeeded)
            // The incremental pull never hears of a hard delete.
            _ = try await target.pull(queryID: "all")
            #expect(target.rows().count == 5)
            // h2 has a local change queued: it stays.
            try target.update(["id": "h2", "text": "mine"])
            let result = try await target.reconcile(by: method)
            #expect(result == ReconcileResult(table: "hard", checked: 4, removed: 1))
            #expect(target.lookup("h1") == nil)
            #expect(target.lookup("h2")?.text("text") == "mine")
            #expect(target.rows().count == 4)
        }
    }
}

@Suite("Offline tables of typed rows")
struct TypedOfflineTests {
    @Test(arguments: [TableProtocol.v2, .v3])
    func typedRowsGoOutAndComeBackTyped(_ version: TableProtocol) async throws {
        try await withSyncServer { _, port in
            let one = try Device(port: port, protocol: version)
            let two = try Device(port: port, protocol: version)
            defer {
                one.remove()
                two.remove()
            }
            let mine = try one.sync.table("todoitem", of: TodoItem.self)
            var item = TodoItem(id: mine.newID())
            item.text = "typed"
            try mine.insert(item)
            #expect(mine.lookup(item.id)?.text == "typed")
            #expect(try one.sync.operations().map(\.kind) == [.insert])
            #expect(await one.sync.push().succeeded)
            let pushed = try #require(mine.lookup(item.id))
            #expect(pushed.system.version != nil && pushed.system.updatedAt != nil)

            let theirs = try two.sync.table("todoitem", of: TodoItem.self)
            let pulled = try await theirs.pull(queryID: "all")
            #expect(pulled.rows == 1)
            let copy = try #require(theirs.lookup(item.id))
            #expect(copy.text == "typed" && copy.system.version == pushed.system.version)

            // An edit of a stale copy is refused; one of the current copy goes through.
            var edited = copy
            edited.complete = true
            try theirs.update(edited)
            #expect(await two.sync.push().succeeded)
            var stale = pushed
            stale.text = "stale"
            do throws(SyncError) {
                _ = try await mine.pull(queryID: "all")
                try mine.update(stale)
                Issue.record("a stale typed edit was queued")
            } catch {
                #expect(error.code == .staleVersion)
            }
            #expect(mine.lookup(item.id)?.complete == true)
            await one.close()
            await two.close()
        }
    }
}

@Suite("Offline tables: local ids for server-assigned keys")
struct LocalIDTests {
    @Test func theServersIdReplacesTheLocalOneEverywhereAndTheLocalOneStillResolves() async throws {
        try await withDevices { _, device, reader in
            let todos = device.sync.table("todoitem", serverAssignsIDs: true)
            #expect(try device.sync.serverAssignsIDs(table: "todoitem"))
            let parent = try todos.insert(["text": "parent"])
            let localID = try #require(parent.text("id"))
            #expect(localID.hasPrefix("local-"))
            try todos.update(["id": .string(localID), "text": "parent, edited"])
            let child = try todos.insert(["text": "child", "parent": .string(localID)])
            let childID = try #require(child.text("id"))
            #expect(try device.sync.operations().map(\.kind) == [.insert, .insert])

            #expect(await device.sync.push().succeeded)
            let pushed = try #require(todos.lookup(localID))
            let serverID = try #require(pushed.text("id"))
            #expect(!serverID.hasPrefix("local-") && serverID.count == 32)
            #expect(pushed.text("text") == "parent, edited")
            #expect(todos.lookup(serverID) == pushed)
            #expect(!device.session.store.contains(todos.prefix + "-" + localID))
            // The reference in the other row follows, locally and on the server.
            let childNow = try #require(todos.lookup(childID))
            #expect(childNow.text("parent") == serverID)
            _ = try await reader.sync.table("todoitem").pull()
            let serverChild = try #require(
                reader.sync.table("todoitem").rows().first { $0.text("text") == "child" })
            #expect(serverChild.text("parent") == serverID)
            // Later changes through the local id reach the server's row.
            try todos.update(["id": .string(localID), "complete": true])
            #expect(try device.sync.operations().first?.itemID == serverID)
            #expect(await device.sync.push().succeeded)
        }
    }

    /// Every reference to a pushed row's local id follows its server id: in the rows sent later
    /// in the same push (one batch or one by one), in rows with nothing queued, and in records
    /// outside the tables, at the top of a row and in arrays.
    @Test(arguments: [PushOptions.Batching.never, .automatic])
    func everyReferenceToALocalIDFollowsTheServersIDAfterThePush(_ batching: PushOptions.Batching) async throws {
        try await withDevices { _, device, reader in
            let todos = device.sync.table("todoitem", serverAssignsIDs: true)
            var locals: [String] = []
            for i in 0..<5 {
                let row = try todos.insert(["text": .string("parent \(i)")])
                locals.append(try #require(row.text("id")))
            }
            let child = try todos.insert(["text": "child", "parent": .string(locals[4])])
            let childID = try #require(child.text("id"))
            // A record no table owns, naming two of the rows, one in an array.
            let store = device.session.store
            var change = StoreChange()
            change.upsert(
                id: "note-1",
                fields: ["about": .string(locals[0]), "also": .array([.string(locals[3]), .string("other")])])
            _ = try store.commit(change)

            #expect(await device.sync.push(options: PushOptions(batching: batching)).succeeded)
            let servers = try locals.map { local in try #require(todos.lookup(local)?.text("id")) }
            #expect(servers.allSatisfy { !$0.hasPrefix("local-") })
            #expect(todos.lookup(childID)?.text("parent") == servers[4])
            let note = try #require(store.record(id: "note-1")).fields
            #expect(note["about"] == .string(servers[0]))
            #expect(note["also"] == .array([.string(servers[3]), .string("other")]))
            // What the server got for the child names the parent's server id.
            _ = try await reader.sync.table("todoitem").pull()
            let serverChild = try #require(
                reader.sync.table("todoitem").rows().first { $0.text("text") == "child" })
            #expect(serverChild.text("parent") == servers[4])
        }
    }
}

@Suite("Offline tables: progress and observation")
struct SyncProgressTests {
    @Test func pushAndPullReportProgressAndEachPageIsOneChangeSet() async throws {
        try await withDevices { _, writer, reader in
            let progress = writer.sync.progress()
            for i in 0..<3 { try writer.sync.table("todoitem").insert(["id": .string("g\(i)"), "text": "x"]) }
            _ = await writer.sync.push()
            var pushed: [SyncProgress] = []
            for await event in progress {
                pushed.append(event)
                if pushed.count == 3 { break }
            }
            #expect(pushed == [.push(sent: 1, total: 3), .push(sent: 2, total: 3), .push(sent: 3, total: 3)])

            for i in 3..<60 { try writer.sync.table("todoitem").insert(["id": .string("g\(i)"), "text": "x"]) }
            _ = await writer.sync.push()
            let pulls = reader.sync.progress()
            let changes = reader.session.store.changes(prefix: "todoitem")
            let result = try await reader.sync.table("todoitem").pull(queryID: "q", pageSize: 25)
            var events: [SyncProgress] = []
            for await event in pulls {
                events.append(event)
                if events.count == result.pages { break }
            }
            #expect(events.last == .pull(table: "todoitem", pages: result.pages, rows: result.rows))
            var sets = 0
            var rows = 0
            for await set in changes {
                sets += 1
                rows += set.inserted.count + set.updated.count
                if rows >= 60 { break }
            }
            #expect(sets <= result.pages)
        }
    }
}

@Suite("Offline tables: faults and every way to settle a conflict")
struct PushFaultTests {
    @Test func aServerErrorIsRecordedAndThePushGoesOnThenTheNextPushSendsItAgain() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "e1", "text": "1"])
            try todos.insert(["id": "e2", "text": "2"])
            server.tableFaults.inject(.fail(status: 500), method: "POST")
            let first = await device.sync.push()
            #expect(!first.aborted)
            #expect(first.outcomes.map(\.result) == [.error, .ok])
            #expect(first.outcomes.map(\.status) == [500, 201])
            let failed = try device.sync.failedOperations()
            #expect(failed.map(\.itemID) == ["e1"] && failed.first?.status == 500)
            #expect(failed.first?.rawBody?.isEmpty == false)
            let second = await device.sync.push()
            #expect(second.succeeded && second.outcomes.map(\.id) == ["e1"])
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }

    @Test func aReplayedUpdateWhoseAnswerWasLostIsASuccessNotAConflict() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port, filters: [freshConnections])
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "u", "text": "1"])
            #expect(await device.sync.push().succeeded)
            try todos.update(["id": "u", "text": "2"])
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "PATCH", times: 2)
            #expect(await device.sync.push().aborted)
            let second = await device.sync.push()
            #expect(second.succeeded)
            // The server remembers the update's key: the replay gets the first answer, 200.
            #expect(second.outcomes.first?.status == 200 && second.outcomes.first?.result == .ok)
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }

    /// Two devices edit one row; `one` pushes second, meets a 412, and `handler` decides.
    func withConflict(
        _ handler: @escaping ConflictHandler, _ body: (Device, Device, PushResult) async throws -> Void
    ) async throws {
        try await withDevices { _, one, two in
            try one.sync.table("todoitem").insert(["id": "k", "text": "base"])
            _ = await one.sync.push()
            _ = try await two.sync.table("todoitem").pull()
            try two.sync.table("todoitem").update(["id": "k", "text": "theirs"])
            _ = await two.sync.push()
            try one.sync.table("todoitem").update(["id": "k", "text": "mine"])
            try one.sync.table("todoitem").insert(["id": "after", "text": "next"])
            try await body(one, two, await one.sync.push(onConflict: handler))
        }
    }

    @Test func discardDropsTheOperationAndTheLocalRow() async throws {
        try await withConflict({ _ in .discard }) { one, two, pushed throws in
            #expect(pushed.outcomes.map(\.result) == [.resolved, .ok])
            #expect(one.sync.table("todoitem").lookup("k") == nil)
            #expect(try one.sync.operations().isEmpty)
        }
    }

    @Test func replaceKeepsTheOperationOverTheServersVersion() async throws {
        try await withConflict({ conflict in
            #expect(conflict.serverItem?.text("text") == "theirs")
            #expect(conflict.localItem?.text("text") == "mine")
            return .replace(["text": "merged"])
        }) { one, two, pushed throws in
            #expect(pushed.outcomes.first?.result == .resolved)
            let ops = try one.sync.operations()
            #expect(ops.first?.itemID == "k" && ops.first?.state == .pending)
            #expect(one.sync.table("todoitem").lookup("k")?.text("text") == "merged")
            #expect(await one.sync.push().succeeded)
            _ = try await two.sync.table("todoitem").pull()
            #expect(two.sync.table("todoitem").lookup("k")?.text("text") == "merged")
        }
    }

    @Test func abortStopsThePushAndKeepsWhatIsLeft() async throws {
        try await withConflict({ _ in .abort }) { one, two, pushed throws in
            #expect(pushed.aborted)
            #expect(pushed.outcomes.count == 1 && pushed.outcomes.first?.result == .conflict)
            #expect(try one.sync.operations().map(\.itemID) == ["k", "after"])
        }
    }

    @Test func oneOperationCanBeCancelledOrEdited() async throws {
        try await withConflict({ _ in .abort }) { one, two, pushed throws in
            #expect(pushed.aborted)
            let stuck = try #require(try one.sync.operations().first)
            let serverVersion = try #require(two.sync.table("todoitem").lookup("k")?.text("version"))
            try one.sync.edit(stuck.sequence, version: serverVersion)
            #expect(try one.sync.operations().first?.version == serverVersion)
            let after = try #require(try one.sync.operations().last)
            try one.sync.cancel(after.sequence)
            #expect(try one.sync.operations().map(\.itemID) == ["k"])
            #expect(await one.sync.push().succeeded)
            do throws(SyncError) {
                try one.sync.cancel(after.sequence)
                Issue.record("a cancelled operation was cancelled again")
            } catch {
                #expect(error.code == .notFound)
            }
        }
    }

    @Test func aRowChangedLocallyDuringAPullKeepsItsLocalChange() async throws {
        try await withDevices { server, one, two in
            for i in 0..<3 { try one.sync.table("todoitem").insert(["id": .string("s\(i)"), "text": "server"]) }
            _ = await one.sync.push()
            let local = two.sync.table("todoitem")
            _ = try await local.pull(queryID: "q")
            try one.sync.table("todoitem").update(["id": "s1", "text": "server, later"])
            _ = await one.sync.push()
            server.tableFaults.inject(.delay(.milliseconds(400)), method: "GET")
            let pull = Task { try await local.pull(queryID: "q") }
            try await Task.sleep(for: .milliseconds(150))
            try local.update(["id": "s1", "text": "mine"])
            let result = try await pull.value
            #expect(result.skipped == 1)
            #expect(local.lookup("s1")?.text("text") == "mine")
            #expect(try two.sync.operations().map(\.itemID) == ["s1"])
        }
    }
}

@Suite("Offline tables: a change to a row while its operation is being pushed")
struct InFlightTests {
    @Test func itIsQueuedBehindTheOperationNeverMergedIntoIt() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "f", "text": "first"])
            server.tableFaults.inject(.delay(.milliseconds(400)), method: "POST")
            let push = Task { await device.sync.push() }
            // Once the insert is on its way (not before: until then the update collapses into it).
            try await server.testControls.waitForRequests("POST", "/tables/todoitem", count: 1)
            try todos.update(["id": "f", "text": "second"])
            let ops = try device.sync.operations()
            #expect(ops.map(\.kind) == [.insert, .update])
            let first = await push.value
            #expect(first.outcomes.map(\.kind) == [.insert])
            // The insert sent "first"; the queued update sends "second" over the new version.
            #expect(try device.sync.operations().map(\.kind) == [.update])
            let second = await device.sync.push()
            #expect(second.succeeded)
            let reader = try Device(port: port)
            defer { reader.remove() }
            _ = try await reader.sync.table("todoitem").pull()
            #expect(reader.sync.table("todoitem").lookup("f")?.text("text") == "second")
            await reader.close()
            await device.close()
        }
    }
}
