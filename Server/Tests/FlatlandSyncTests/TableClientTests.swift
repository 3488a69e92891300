import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import FlatlandSync
import Foundation
import Testing

/// Typed and untyped tables against the embedded table server over loopback, in each protocol.
@Suite("Tables against the embedded server")
struct TableClientTests {
    static let protocols: [TableProtocol] = [.v1, .v2, .v3]

    @Test(arguments: protocols)
    func typedInsertLookupUpdateDelete(_ version: TableProtocol) async throws {
        try await withTableServer { port in
            let log = RequestLog()
            let session = try tableSession(port: port, protocol: version, log: log)
            let todos = try Table<TodoItem>("todoitem", session: session, options: tableOptions(version))

            var item = TodoItem(id: todos.newID())
            item.text = "Buy milk"
            let serverID = item.serverID
            #expect(serverID.count == 32 && serverID.allSatisfy { $0.isHexDigit && !$0.isUppercase })

            let inserted = try await todos.insert(item)
            #expect(inserted.status == 201)
            #expect(inserted.item.id == item.id)
            #expect(inserted.item.text == "Buy milk")
            let version1 = try #require(inserted.item.system.version)
            #expect(inserted.item.system.updatedAt != nil)
            #expect((inserted.item.system.createdAt != nil) == (version != .v3))
            #expect(session.store.entity(item.id)?.system.version == version1)

            // The POST carried the server id, the row's own fields and no system property.
            let post = try #require(log.last)
            #expect(post.method == .post)
            let body = try #require(try JSONValue(parsing: post.body ?? []).objectValue)
            #expect(body.keys == ["id", "text", "complete"])
            #expect(body.text("id") == serverID)

            // A lookup of a row the store holds with a version is conditional: 304 keeps it.
            let again = try await todos.lookup(item.id)
            #expect(log.last?.headers["If-None-Match"] == "\"\(version1)\"")
            #expect(again.notModified && again.status == 304)
            #expect(again.item.system.version == version1)

            var changed = inserted.item
            changed.complete = true
            let updated = try await todos.update(changed)
            let patch = try #require(log.last)
            #expect(patch.method == (version == .v3 ? .put : .patch))
            #expect(patch.headers["If-Match"] == "\"\(version1)\"")
            #expect(updated.item.complete)
            #expect(updated.item.system.version != version1)
            #expect(session.store.entity(item.id)?.complete == true)

            try await todos.delete(updated.item)
            #expect(log.last?.method == .delete)
            #expect(log.last?.headers["If-Match"] == "\"\(updated.item.system.version!)\"")
            #expect(!session.store.contains(item.id))

            // Soft-deleted on the server: v3 says 410, the others 404.
            do throws(TableError<TodoItem>) {
                _ = try await todos.lookup(item.id)
                Issue.record("a deleted row was found")
            } catch {
                #expect(error.code == (version == .v3 ? .gone : .notFound))
                #expect(error.status == (version == .v3 ? 410 : 404))
            }
            await session.close()
        }
    }

    @Test(arguments: protocols)
    func aStaleUpdateIsAPreconditionFailureCarryingTheServersRowDecoded(_ version: TableProtocol) async throws {
        try await withTableServer { port in
            let session = try tableSession(port: port, protocol: version)
            let todos = try Table<TodoItem>("todoitem", session: session, options: tableOptions(version))
            var item = TodoItem(id: todos.newID())
            item.text = "first"
            let first = try await todos.insert(item).item
            var second = first
            second.text = "second"
            let current = try await todos.update(second).item

            var stale = first
            stale.text = "stale"
            do throws(TableError<TodoItem>) {
                _ = try await todos.update(stale)
                Issue.record("a stale update went through")
            } catch {
                #expect(error.code == .preconditionFailed && error.status == 412)
                let server = try #require(error.serverItem)
                #expect(server.id == item.id)
                #expect(server.text == "second")
                #expect(server.system.version == current.system.version)
                #expect(error.serverItemJSON?.text("text") == "second")
            }
            // The server's row in the error is not written to the store unless adopted.
            #expect(session.store.entity(item.id)?.text == "second")
            await session.close()
        }
    }

    @Test(arguments: protocols)
    func insertingAnIdThatExistsIsAConflictWithTheServersRow(_ version: TableProtocol) async throws {
        try await withTableServer { port in
            let session = try tableSession(port: port, protocol: version)
            let todos = try Table<TodoItem>("todoitem", session: session, options: tableOptions(version))
            var item = TodoItem(id: todos.newID())
            item.text = "original"
            _ = try await todos.insert(item)
            item.text = "copy"
            do throws(TableError<TodoItem>) {
                _ = try await todos.insert(item)
                Issue.record("a duplicate insert went through")
            } catch {
                #expect(error.code == .conflict && error.status == 409)
                #expect(error.serverItem?.text == "original")
            }
            await session.close()
        }
    }

    @Test(arguments: protocols)
    func untypedRowsCarryTheProtocolsOwnNames(_ version: TableProtocol) async throws {
        try await withTableServer { port in
            let log = RequestLog()
            let session = try tableSession(port: port, protocol: version, log: log)
            let todos = UntypedTable("todoitem", session: session, options: tableOptions(version))

            let inserted = try await todos.insert(["text": "Paint", "complete": false, "version": "ignored"])
            let row = inserted.item
            let id = try #require(row.text("id"))
            #expect(id.count == 32)
            #expect(row.keys.first == "id")
            #expect(row.text("text") == "Paint")
            let names = version.systemPropertyNames
            for name in names { #expect(row[name] != nil, "\(name) missing in \(row)") }
            let other = TableProtocol.allCases.filter { $0 != version }.flatMap(\.systemPropertyNames)
                .filter { !names.contains($0) }
            for name in other { #expect(row[name] == nil, "\(name) in a \(version) row") }
            // The body sent had no system property, even the one the caller put in.
            let sent = try #require(try JSONValue(parsing: log.last?.body ?? []).objectValue)
            #expect(sent.keys == ["id", "text", "complete"])
            #expect(session.store.contains(todos.storeID(id)))

            var change: JSONObject = ["id": .string(id), "complete": true]
            change[version.name(of: .version)!] = row[version.name(of: .version)!]
            let updated = try await todos.update(change).item
            #expect(updated["complete"] == .bool(true))
            #expect(updated.text("text") == "Paint")

            // The first version is stale now.
            do throws(TableError<JSONObject>) {
                _ = try await todos.update(change)
                Issue.record("a stale update went through")
            } catch {
                #expect(error.code == .preconditionFailed)
                #expect(error.serverItem?["complete"] == JSONValue.bool(true))
                #expect(error.serverItem?.text(version.name(of: .version)!) == todos.version(of: updated))
            }
            try await todos.delete(id, version: todos.version(of: updated))
            #expect(todos.stored(id) == nil)
            await session.close()
        }
    }

    @Test func aV1BodyWithAReservedNameIsRefusedBeforeItIsSent() async throws {
        try await withTableServer { port in
            let log = RequestLog()
            let session = try tableSession(port: port, protocol: .v1, log: log)
            let todos = UntypedTable("todoitem", session: session, options: tableOptions(.v1))
            do throws(TableError<JSONObject>) {
                _ = try await todos.insert(["text": "x", "__secret": 1])
                Issue.record("a __ name was sent")
            } catch {
                #expect(error.code == .invalidRequest)
                #expect(error.message.contains("__secret"))
            }
            #expect(log.requests.isEmpty)
            await session.close()
        }
    }

    @Test func v1AsksForTheSystemPropertiesOnEveryRequestAndSendsTheAppKey() async throws {
        try await withTableServer { port in
            let log = RequestLog()
            let session = try tableSession(port: port, protocol: .v1, appKey: "secret-key", log: log)
            let options = TableOptions(protocol: .v1, systemProperties: [.updatedAt, .deleted])
            let todos = UntypedTable("todoitem", session: session, options: options)
            let row = try await todos.insert(["text": "a"]).item
            #expect(row["__updatedAt"] != nil && row["__deleted"] != nil)
            #expect(row["__version"] == nil && row["__createdAt"] == nil)
            let rows = try await todos.query(TableQuery(filter: .field("text") == "a"))
            #expect(rows.count == 1)
            for request in log.requests {
                #expect(request.url.query?.contains("__systemproperties=__updatedAt%2C__deleted") == true)
                #expect(request.headers["X-ZUMO-APPLICATION"] == "secret-key")
                #expect(request.headers["ZUMO-API-VERSION"] == nil)
                #expect(request.headers["X-ZUMO-INSTALLATION-ID"] == "install-1")
            }
            await session.close()
        }
    }

    @Test(arguments: protocols)
    func aWritesAnswerLeavesTheTablesListingAsItWas(_ version: TableProtocol) async throws {
        try await withTableServer { port in
            let session = try tableSession(port: port, protocol: version)
            let todos = try Table<TodoItem>("todoitem", session: session, options: tableOptions(version))
            for i in 0..<3 {
                var item = TodoItem(id: todos.newID())
                item.text = "item \(i)"
                _ = try await todos.insert(item)
            }
            _ = try await todos.query(TableQuery())
            let listed = try #require(todos.collection(TableQuery())).knownItems
            #expect(listed.count == 3)
            // An insert and an update answer with one row each: not a listing of the table, so
            // the listing stays what the last query returned.
            var more = TodoItem(id: todos.newID())
            more.text = "more"
            var changed = try await todos.insert(more).item
            changed.text = "changed"
            _ = try await todos.update(changed)
            #expect(try #require(todos.collection(TableQuery())).knownItems == listed)
            await session.close()
        }
    }

    @Test(arguments: protocols)
    func aQueryReadsEveryPageIntoTheStoreAndItsEndpointCollection(_ version: TableProtocol) async throws {
        try await withTableServer { port in
            let session = try tableSession(port: port, protocol: version)
            let todos = try Table<TodoItem>("todoitem", session: session, options: tableOptions(version))
            for i in 0..<120 {
                var item = TodoItem(id: todos.newID())
                item.text = String(format: "item %03d", i)
                item.complete = i % 3 == 0
                _ = try await todos.insert(item)
            }
            let fresh = try tableSession(port: port, protocol: version)
            let reader = try Table<TodoItem>("todoitem", session: fresh, options: tableOptions(version))
            var pages: [TablePage] = []
            var texts: [String] = []
            for try await page in reader.pages(TableQuery(orderBy: [.ascending("text")], includeTotalCount: true)) {
                pages.append(page)
                texts += reader.items(in: page).map(\.text)
            }
            #expect(texts == (0..<120).map { String(format: "item %03d", $0) })
            // The server's pages: 100 rows in v3 (Datasync's default), 50 in v1 and v2.
            #expect(pages.map(\.ids.count) == (version == .v3 ? [100, 20] : [50, 50, 20]))
            #expect(pages.map(\.offset) == (version == .v3 ? [0, 100] : [0, 50, 100]))
            #expect(pages.first?.totalCount == 120)
            #expect(fresh.store.count(prefix: "todo") == 120)
            let endpoint = try #require(
                reader.collection(TableQuery(orderBy: [.ascending("text")], includeTotalCount: true)))
            #expect(endpoint.knownItems.count == 120)
            #expect(endpoint.knownItems == pages.flatMap(\.ids))

            let open = try await reader.query(
                TableQuery(filter: .field("complete") == false, orderBy: [.descending("text")]))
            #expect(open.count == 80)
            #expect(open.first?.text == "item 119")
            #expect(open.allSatisfy { !$0.complete })
            await fresh.close()
            await session.close()
        }
    }

    @Test func aLookupThatIsNotModifiedIsASuccessOnTheTask() async throws {
        try await withTableServer { port in
            let session = try tableSession(port: port, protocol: .v2)
            let todos = UntypedTable("todoitem", session: session)
            let row = try await todos.insert(["text": "cached"]).item
            let id = try #require(row.text("id"))
            let version = try #require(todos.version(of: row))
            let task = session.launch(
                .get, TableQuery.tablePath("todoitem", id: id), headers: ["If-None-Match": "\"\(version)\""])
            let result = try await task.value
            #expect(result.status == 304)
            #expect(task.statusCode == 304 && task.state == .succeeded)
            #expect(result.ingest == nil)
            #expect(todos.stored(id) == row)
            await session.close()
        }
    }

    @Test func undeleteRestoresASoftDeletedRow() async throws {
        try await withTableServer { port in
            let session = try tableSession(port: port, protocol: .v2)
            let todos = try Table<TodoItem>("todoitem", session: session)
            var item = TodoItem(id: todos.newID())
            item.text = "phoenix"
            let saved = try await todos.insert(item).item
            try await todos.delete(saved)
            let deleted = try await todos.query(
                TableQuery(filter: .field("id") == saved.serverID, includeDeleted: true))
            #expect(deleted.count == 1 && deleted.first?.system.deleted == true)
            let restored = try await todos.undelete(try #require(deleted.first)).item
            #expect(restored.system.deleted == false && restored.text == "phoenix")
            #expect(try await todos.lookup(saved.id).item.text == "phoenix")
            await session.close()
        }
    }

    @Test func aTableWhoseServerAssignsIdsSendsNone() async throws {
        try await withTableServer { port in
            let log = RequestLog()
            let session = try tableSession(port: port, protocol: .v2, log: log)
            let todos = UntypedTable("todoitem", session: session, options: TableOptions(serverAssignsIDs: true))
            let row = try await todos.insert(["text": "server named"]).item
            let sent = try #require(try JSONValue(parsing: log.last?.body ?? []).objectValue)
            #expect(sent["id"] == nil)
            let id = try #require(row.text("id"))
            #expect(!id.isEmpty)
            #expect(try await todos.lookup(id).item.text("text") == "server named")
            await session.close()
        }
    }

    @Test func aTypedTableNeedsItsTypeRegistered() throws {
        let environment = try Environment(name: "x", baseURL: URL(string: "http://127.0.0.1:1")!)
        let session = Session(user: "u", environment: environment)
        #expect(throws: TableError<TodoItem>.self) { _ = try Table<TodoItem>("todoitem", session: session) }
    }
}

extension JSONValue {
    var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }
}
