import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandSQLite
import FlatlandServer
import FlatlandServerTesting
import Foundation
import Testing

/// A fresh directory for one test's store files, removed afterwards.
private func withDirectory<R>(_ body: (String) async throws -> R) async throws -> R {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "flatland-sessions-\(UUID().uuidString)"
    ).path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    return try await body(directory)
}

private func persistentSession(
    _ environment: FlatlandHTTP.Environment, user: String, directory: String, hooks: StoreHooks = StoreHooks()
) throws -> Session {
    try Session(
        user: user, environment: environment, registry: try EntityRegistry([SeedUser.self, SeedDevice.self]),
        hooks: hooks, storage: .persistent(SQLitePersistence.sessionStorage(in: directory)))
}

@Suite("Sessions on disk")
struct PersistentSessionTests {
    @Test("a persistent session survives a restart: a new session on the same directory sees its data")
    func survivesARestart() async throws {
        try await withServer { server, environment in
            try await withDirectory { directory in
                let first = try persistentSession(environment, user: "ada", directory: directory)
                #expect(first.isPersistent)
                #expect(first.store.isLazy)
                let page = try await first.send(.get, "/users?offset=0&count=5")
                #expect(page.items == Array(server.state.userIDs.prefix(5)))
                await first.close()
                #expect(!first.isActive)
                #expect(await failure(of: first.launch(.get, "/users"))?.code == .sessionEnded)

                // Opened off the cooperative pool this time.
                let second = try await Session.open(
                    user: "ada", environment: environment,
                    registry: try EntityRegistry([SeedUser.self, SeedDevice.self]),
                    storage: .persistent(SQLitePersistence.sessionStorage(in: directory)))
                #expect(second.store.ids(prefix: "u") == page.items.sorted())
                #expect(
                    second.store.collection(displayIdentifier: "/users")?.items.prefix(5).compactMap { $0 }
                        == page.items)
                #expect(server.knobs.requestCount("GET", "/users") == 1)
                await second.close()
            }
        }
    }

    @Test("logout cancels, wipes, closes and removes the file; logging in again starts empty")
    func logoutRemovesTheFile() async throws {
        try await withServer { _, environment in
            try await withDirectory { directory in
                let storage = SQLitePersistence.sessionStorage(in: directory)
                let file = storage.location(user: "ada", environment: environment.name).path
                let session = try persistentSession(environment, user: "ada", directory: directory)
                _ = try await session.send(.get, "/devices?offset=0&count=3")
                #expect(session.store.count == 3)
                #expect(FileManager.default.fileExists(atPath: file))
                await session.logout()
                #expect(session.logoutError == nil)
                #expect(!session.isActive)
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    #expect(!FileManager.default.fileExists(atPath: file + suffix))
                }
                let again = try persistentSession(environment, user: "ada", directory: directory)
                #expect(again.store.count == 0)
                #expect(again.store.collections.isEmpty)
                await again.logout()
                #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
            }
        }
    }

    @Test("two users: two files, neither sees the other's data; one's logout leaves the other's file")
    func differentUsersDifferentFiles() async throws {
        try await withServer { _, environment in
            try await withDirectory { directory in
                let storage = SQLitePersistence.sessionStorage(in: directory)
                let ada = try persistentSession(environment, user: "ada", directory: directory)
                // A user name that tries to reach another user's file stays in its own.
                let sneaky = try persistentSession(environment, user: "../ada", directory: directory)
                let adaID = try await register(ada, email: "ada@example.com", firstname: "Ada")
                let sneakyID = try await register(sneaky, email: "eve@example.com", firstname: "Eve")
                let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
                    $0.hasSuffix(".sqlite")
                }
                #expect(files.count == 2)
                #expect(
                    storage.location(user: "ada", environment: environment.name).path
                        != storage.location(user: "../ada", environment: environment.name).path)
                #expect(ada.store.contains(adaID) && !ada.store.contains(sneakyID))
                #expect(sneaky.store.contains(sneakyID) && !sneaky.store.contains(adaID))
                await sneaky.logout()
                #expect(ada.store.contains(adaID))
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sqlite") }
                        .count == 1)
                // The same user in the same process is one open file: a second session is refused.
                let twice = #expect(throws: SQLiteStoreError.self) {
                    _ = try persistentSession(environment, user: "ada", directory: directory)
                }
                #expect(twice?.code == .alreadyOpen)
                await ada.logout()
            }
        }
    }

    @Test("a persistent session commits off Swift's cooperative pool")
    func commitsOffTheCooperativePool() async throws {
        try await withServer { _, environment in
            try await withDirectory { directory in
                let inTask = LockedLines()
                let hooks = StoreHooks(afterStore: { _ in
                    inTask.append(withUnsafeCurrentTask { $0 != nil } ? "task" : "thread")
                })
                let session = try persistentSession(environment, user: "ada", directory: directory, hooks: hooks)
                _ = try await session.send(.get, "/devices?offset=0&count=4")
                #expect(inTask.all == ["thread", "thread", "thread", "thread"])
                await session.logout()
            }
        }
    }
}
