import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandServer
import FlatlandServerTesting
import Foundation
import Testing

@Suite("Tasks: de-duplication, cancellation, failures")
struct TaskTests {
    @Test("identical GETs in flight join one request; a different header does not")
    func deduplication() async throws {
        try await withServer { server, environment in
            server.knobs.hold("/devices")
            let session = makeSession(environment)
            let tasks = (0..<5).map { _ in session.launch(.get, "/devices?offset=0&count=3") }
            #expect(tasks.allSatisfy { $0 === tasks[0] })
            try await server.knobs.waitForRequests("GET", "/devices", count: 1)
            let other = session.launch(.get, "/devices?offset=0&count=3", headers: ["Accept-Language": "fr"])
            #expect(other !== tasks[0])
            try await server.knobs.waitForRequests("GET", "/devices", count: 2)
            #expect(session.backend.tasksInFlight.count == 2)
            server.knobs.release("/devices")
            let results = try await withThrowingTaskGroup(of: HTTPResult.self) { group in
                for task in tasks + [other] { group.addTask { try await task.value } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 6)
            #expect(server.knobs.requestCount("GET", "/devices") == 2)
            #expect(tasks[0].joinCount == 4)
            // Once done, the same GET goes to the network again.
            _ = try await session.send(.get, "/devices?offset=0&count=3")
            #expect(server.knobs.requestCount("GET", "/devices") == 3)
        }
    }

    @Test(
        "cancelling the task awaiting send cancels its request, unless another launch joined it",
        arguments: TransportKind.allCases)
    func sendFollowsItsCallersCancellation(_ kind: TransportKind) async throws {
        try await withServer { server, environment in
            server.knobs.hold("/devices")
            let session = makeSession(environment, transport: kind)
            let count = session.store.count
            // Alone: the caller's cancel cancels the request, and nothing is applied.
            let alone = Task { try await session.send(.get, "/devices?offset=0&count=3") }
            try await server.knobs.waitForRequests("GET", "/devices", count: 1)
            alone.cancel()
            // (Were the cancel ignored, the held request would wait forever: the hold is let go
            // after ten seconds, and the send then returns a result instead of the error.)
            let watchdog = Task {
                try await Task.sleep(for: .seconds(10))
                server.knobs.release("/devices")
            }
            do {
                _ = try await alone.value
                Issue.record("a cancelled send returned a result")
            } catch let error as HTTPError {
                #expect(error.code == .cancelled)
            }
            watchdog.cancel()
            // The cancelled request's handler still waits at the hold: let it go, hold anew.
            server.knobs.release("/devices")
            server.knobs.hold("/devices")
            #expect(session.store.count == count)
            #expect(session.backend.tasksInFlight.isEmpty)

            // Joined: another launch waits for the same GET, so it goes on for both.
            let joined = Task { try await session.send(.get, "/devices?offset=0&count=4") }
            try await server.knobs.waitForRequests("GET", "/devices", count: 2)
            let other = session.launch(.get, "/devices?offset=0&count=4")
            #expect(other.joinCount == 1)
            joined.cancel()
            server.knobs.release("/devices")
            let result = try await joined.value
            #expect(result.status == 200)
            #expect(try await other.value.status == 200)
            #expect(session.store.count > count)
        }
    }

    @Test("cancelling in the middle of a body leaves the store exactly as it was", arguments: TransportKind.allCases)
    func cancelMidBody(_ kind: TransportKind) async throws {
        try await withServer(population: .init(users: 200)) { server, environment in
            let session = makeSession(environment, transport: kind)
            _ = try await session.send(.get, "/devices?offset=0&count=5")
            let before = session.store.snapshot()
            server.knobs.hold("/users", afterBytes: 20_000)
            let task = session.launch(.get, "/users?offset=0&count=200")
            try await waitUntil("part of the body arrived") { task.bytesReceived > 0 }
            #expect(task.state == .running)
            task.cancel()
            let error = try #require(await failure(of: task))
            #expect(error.code == .cancelled)
            #expect(task.state == .cancelled)
            #expect(session.store.count == before.count)
            #expect(session.store.allIDs() == before.allIDs())
            #expect(session.store.collections == before.collections)
            #expect(session.backend.tasksInFlight.isEmpty)
        }
    }

    @Test("the backend lists the tasks in flight and cancels one or all", arguments: TransportKind.allCases)
    func listAndCancel(_ kind: TransportKind) async throws {
        try await withServer { server, environment in
            server.knobs.hold("/devices")
            server.knobs.hold("/users")
            let session = makeSession(environment, transport: kind)
            let a = session.launch(.get, "/devices")
            let b = session.launch(.get, "/users")
            let c = session.launch(.get, "/users?offset=3")
            #expect(session.backend.tasksInFlight.map(\.id) == [a.id, b.id, c.id])
            #expect(session.backend.cancel(taskID: a.id))
            #expect(await failure(of: a)?.code == .cancelled)
            #expect(session.backend.tasksInFlight.map(\.id) == [b.id, c.id])
            session.backend.cancelAll()
            #expect(await failure(of: b)?.code == .cancelled)
            #expect(await failure(of: c)?.code == .cancelled)
            #expect(session.backend.tasksInFlight.isEmpty)
            #expect(!session.backend.cancel(taskID: a.id))
            #expect(session.store.count == 0)
        }
    }

    @Test(
        "a connection dropped in the middle of a body is a transport failure; nothing is applied",
        arguments: TransportKind.allCases)
    func droppedConnection(_ kind: TransportKind) async throws {
        try await withServer(population: .init(users: 100)) { server, environment in
            server.knobs.dropConnection("/users", afterBytes: 10_000)
            let session = makeSession(environment, transport: kind)
            let task = session.launch(.get, "/users?offset=0&count=100")
            let error = try #require(await failure(of: task))
            #expect(error.code == .transport)
            #expect(error.taskID == task.id)
            #expect(task.state == .failed)
            #expect(session.store.count == 0)
            #expect(session.store.collections.isEmpty)
            // The next request is whole again.
            let again = try await session.send(.get, "/users?offset=0&count=100")
            #expect(again.items.count == 100)
        }
    }

    @Test(
        "4xx and 5xx carry the task, the endpoint, the status and the server's error body",
        arguments: TransportKind.allCases)
    func statusErrors(_ kind: TransportKind) async throws {
        try await withServer { server, environment in
            let session = makeSession(environment, transport: kind)
            let task = session.launch(.get, "/users/u-nobody?fields=firstname")
            let notFound = try #require(await failure(of: task))
            #expect(notFound.code == .status)
            #expect(notFound.status == 404)
            #expect(notFound.taskID == task.id)
            #expect(notFound.endpoint == "/users/u-nobody?fields=firstname")
            #expect(notFound.method == .get)
            #expect(notFound.bodyJSON?["error"]?["code"] == .number(404))
            #expect(task.statusCode == 404)

            let unauthorized = try #require(await failure(of: session.launch(.get, "/user/me")))
            #expect(unauthorized.status == 401)

            server.knobs.fail("/devices", times: 1, status: 500)
            let serverError = try #require(await failure(of: session.launch(.get, "/devices")))
            #expect(serverError.status == 500)
            #expect(serverError.bodyJSON?["error"]?["message"] == .string("injected failure"))
            #expect(server.knobs.requestCount("GET", "/devices") == 1)
            #expect(session.store.count == 0)
        }
    }

    @Test("the completion-handler form gets the same result")
    func completionHandler() async throws {
        try await withServer { _, environment in
            let session = makeSession(environment)
            let result: Result<HTTPResult, HTTPError> = await withCheckedContinuation { continuation in
                session.launch(.get, "/devices?offset=0&count=2") { continuation.resume(returning: $0) }
            }
            let value = try result.get()
            #expect(value.items.count == 2)
            #expect(session.store.count(prefix: "d") == 2)
        }
    }
}
