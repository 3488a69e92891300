import Dispatch
import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandServer
import FlatlandSync
import Foundation
import Synchronization
import Testing

/// A pull reads the next page while the page before it commits; pages and tokens still reach
/// the file in order, and what the server changes between two pages is applied as it should be.
@Suite("A pull reads one page ahead")
struct PullPipelineTests {
    /// A persistent device whose requests to the table's rows pass through `onPage` first
    /// (given the page's number, from 1) and whose store runs `beforeStore` in each commit.
    static func device(
        port: Int, directory: String, onPage: @escaping @Sendable (Int) async -> Void = { _ in },
        beforeStore: (@Sendable (IncomingEntity) -> Void)? = nil
    ) throws -> (Session, SyncContext) {
        let environment = try Environment(
            name: "tables", baseURL: URL(string: "http://127.0.0.1:\(port)")!, allowInsecureHTTP: true)
        var configuration = Backend.Configuration()
        configuration.addTableHeaders(protocol: .v2)
        let pages = Mutex(0)
        configuration.filters.append(
            ClosureFilter { request, next in
                if request.method == .get, request.endpoint.hasPrefix("/tables/todoitem") {
                    await onPage(
                        pages.withLock { n in
                            n += 1
                            return n
                        })
                }
                return try await next(request)
            })
        var hooks = StoreHooks()
        hooks.beforeStore = beforeStore
        let session = try Session(
            user: "device", environment: environment, registry: try EntityRegistry([TodoItem.self]), hooks: hooks,
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        return (session, try SyncContext(session: session, options: TableOptions(protocol: .v2)))
    }

    static func scratch() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("flatland-pipeline-\(UUID())").path
    }

    /// `count` rows on the server, through an online table.
    static func seed(port: Int, count: Int) async throws {
        let session = try tableSession(port: port, protocol: .v2)
        let todos = UntypedTable("todoitem", session: session, options: tableOptions(.v2))
        for i in 0..<count { _ = try await todos.insert(["id": .string("row-\(i)"), "text": .string("Row \(i)")]) }
        await session.close()
    }

    /// The next page is asked for while the page before it is still committing: the commit of
    /// page 1 waits (in its store hook) until page 2's request went out. Reading one page after
    /// the other, page 2 would only be asked for once page 1 was written, and the wait would
    /// time out.
    @Test func theNextPageIsRequestedWhileThePageBeforeCommits() async throws {
        try await withSyncServer { _, port in
            try await Self.seed(port: port, count: 12)
            let directory = Self.scratch()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let secondAsked = DispatchSemaphore(value: 0)
            let overlapped = Mutex<Bool?>(nil)
            let (session, sync) = try Self.device(
                port: port, directory: directory,
                onPage: { page in if page == 2 { secondAsked.signal() } },
                beforeStore: { _ in
                    overlapped.withLock { seen in
                        guard seen == nil else { return }
                        seen = secondAsked.wait(timeout: .now() + 10) == .success
                    }
                })
            let pulled = try await sync.table("todoitem").pull(queryID: "all", pageSize: 5)
            #expect(overlapped.withLock { $0 } == true)
            // 0–4, 4–8 and 8–11 (each request after a full page reads its last tick again), and
            // the empty page after the key; the rows read again count as none.
            #expect(pulled.pages == 4)
            #expect(pulled.rows == 12)
            #expect(session.store.count(prefix: TableRowID.prefix(forTable: "todoitem")) == 12)
            await session.close()
        }
    }

    /// A row the server deletes between two pages arrives live in the first and deleted in the
    /// second, which is read before the first is written: it must still be removed locally (the
    /// page's removals are decided at its commit, not while it is read).
    @Test func aRowDeletedBetweenTwoPagesIsRemoved() async throws {
        try await withSyncServer { _, port in
            try await Self.seed(port: port, count: 8)
            let directory = Self.scratch()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let online = try tableSession(port: port, protocol: .v2)
            let todos = UntypedTable("todoitem", session: online, options: tableOptions(.v2))
            let (session, sync) = try Self.device(
                port: port, directory: directory,
                onPage: { page in
                    // Before page 2 is read, the server soft-deletes a row of page 1.
                    if page == 2 { try? await todos.delete("row-1") }
                })
            let pulled = try await sync.table("todoitem").pull(queryID: "all", pageSize: 4)
            let prefix = TableRowID.prefix(forTable: "todoitem")
            #expect(!session.store.contains(TableRowID.storeID(serverID: "row-1", prefix: prefix)))
            #expect(session.store.contains(TableRowID.storeID(serverID: "row-0", prefix: prefix)))
            #expect(session.store.count(prefix: prefix) == 7)
            #expect(pulled.deleted == 1)
            await session.close()
            await online.close()
        }
    }

    /// A pull's pages and a push's answers leave the store's task collections alone: a pull of
    /// more pages than the store keeps task collections (64) used to push out every one the app's
    /// own requests had made.
    @Test func aSyncKeepsNoTaskCollectionsAndLeavesTheAppsOwn() async throws {
        try await withSyncServer { _, port in
            try await Self.seed(port: port, count: 70)
            let directory = Self.scratch()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let (session, sync) = try Self.device(port: port, directory: directory)
            // The app's own request: an online query through the same session.
            let online = UntypedTable("todoitem", session: session, options: TableOptions(protocol: .v2))
            #expect(try await online.query(TableQuery(top: 3)).count == 3)
            let own = session.store.collections(kind: .task).map(\.displayIdentifier)
            #expect(own.count == 1)

            let todos = sync.table("todoitem")
            let pulled = try await todos.pull(queryID: "all", pageSize: 1)
            #expect(pulled.pages > 64)
            #expect(session.store.collections(kind: .task).map(\.displayIdentifier) == own)

            for i in 0..<3 { try todos.insert(["id": .string("new-\(i)"), "text": .string("New \(i)")]) }
            let pushed = await sync.push()
            #expect(pushed.succeeded && pushed.outcomes.count == 3)
            #expect(session.store.collections(kind: .task).map(\.displayIdentifier) == own)
            await session.close()
        }
    }
}
