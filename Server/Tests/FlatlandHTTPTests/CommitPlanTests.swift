import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Synchronization
import Testing

/// What a request's commit plan does with the commit of its response: removals and work in the
/// same transaction, and a condition that leaves entities out.
@Suite("A response's commit plan")
struct CommitPlanTests {
    static let page =
        #"{"offset":0,"count":3,"total":3,"data":[{"uuid":"x-1","n":1},{"uuid":"x-2","n":2},{"uuid":"x-3","n":3}]}"#

    func withSession<R>(_ body: (Session) async throws -> R) async throws -> R {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-plan-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = try Environment(name: "canned", baseURL: URL(string: "http://127.0.0.1:1")!)
        var configuration = Backend.Configuration()
        configuration.makeTransport = { CannedTransport(headers: [:], body: CommitPlanTests.page) }
        let session = try Session(
            user: "u", environment: environment, storage: .persistent(SQLitePersistence.sessionStorage(in: directory)),
            configuration: configuration)
        let result = try await body(session)
        await session.close()
        return result
    }

    static func createMarks(_ session: Session) throws {
        try session.store.commit(
            StoreChange(),
            alongside: SQLiteTransactionWork { db in try db.execute(sql: "CREATE TABLE marks (name TEXT)") })
    }

    static func marks(_ session: Session) throws -> [String] {
        let found = Mutex<[String]>([])
        try session.store.commit(
            StoreChange(),
            alongside: SQLiteTransactionWork { db in
                let names = try String.fetchAll(db, sql: "SELECT name FROM marks")
                found.withLock { $0 = names }
            })
        return found.withLock { $0 }
    }

    @Test func removalsAndWorkCommitWithTheBody() async throws {
        try await withSession { session in
            try CommitPlanTests.createMarks(session)
            try session.store.commit(
                {
                    var c = StoreChange(); c.upsert(id: "old-1", fields: ["a": 1]); return c
                }())
            let result = try await session.send(.get, "/things?offset=0&count=3") { batch in
                #expect(batch.entityCount == 3)
                return ResponseCommit(
                    removing: ["old-1"],
                    alongside: SQLiteTransactionWork { db in try db.execute(sql: "INSERT INTO marks VALUES ('page')") })
            }
            #expect(result.items == ["x-1", "x-2", "x-3"])
            #expect(!session.store.contains("old-1"))
            #expect(result.changes.removed == ["old-1"])
            #expect(try CommitPlanTests.marks(session) == ["page"])
        }
    }

    @Test func aFailingWorkWritesNothingAndFailsTheTask() async throws {
        struct Refused: Error {}
        try await withSession { session in
            try CommitPlanTests.createMarks(session)
            let task = session.launch(.get, "/things") { _ in
                ResponseCommit(
                    alongside: SQLiteTransactionWork { db in
                        try db.execute(sql: "INSERT INTO marks VALUES ('half')")
                        throw Refused()
                    })
            }
            await #expect(throws: HTTPError.self) { _ = try await task.value }
            #expect(session.store.count == 0)
            #expect(try CommitPlanTests.marks(session).isEmpty)
        }
    }

    @Test func aPlanThatThrowsWritesNothing() async throws {
        struct Refused: Error {}
        try await withSession { session in
            let task = session.launch(.get, "/things") { _ in throw Refused() }
            do throws(HTTPError) {
                _ = try await task.value
                Issue.record("the task succeeded")
            } catch {
                #expect(error.code == .persistence)
            }
            #expect(session.store.count == 0)
        }
    }

    @Test func anIngestConditionLeavesEntitiesOutOfTheStoreAndTheTask() async throws {
        let store = Store()
        var options = IngestOptions()
        let seen = Mutex<[String]>([])
        options.condition = { entity in
            seen.withLock { $0.append(entity.id) }
            return entity.id != "x-2"
        }
        let result = try store.ingest(Array(CommitPlanTests.page.utf8), options: options)
        #expect(result.taskCollection.knownItems == ["x-1", "x-3"])
        #expect(!store.contains("x-2") && store.contains("x-1"))
        #expect(seen.withLock { $0 } == ["x-1", "x-2", "x-3"])
        // The store's own hook still decides too.
        let hooked = Store(hooks: StoreHooks(condition: { $0.id != "x-1" }))
        _ = try hooked.ingest(Array(CommitPlanTests.page.utf8), options: options)
        #expect(hooked.allIDs() == ["x-3"])
    }
}
