import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandServer
import FlatlandServerTesting
import Foundation
import Testing

@Suite("Streaming into the store over loopback")
struct StreamingTests {
    @Test(
        "a large paginated response is read in small chunks and applied whole", arguments: TransportKind.allCases,
        [512, 4096])
    func largePaginatedResponse(_ kind: TransportKind, chunkSize: Int) async throws {
        try await withServer(population: .init(users: 400)) { server, environment in
            server.knobs.chunkBodies(size: chunkSize)
            let session = makeSession(environment, transport: kind)
            let task = session.launch(.get, "/users?offset=0&count=400")
            let result = try await task.value
            #expect(result.status == 200)
            #expect(result.items.count == 400)
            #expect(session.store.count(prefix: "u") == 400)
            #expect(task.chunksReceived > 1)
            #expect(task.largestChunk < task.bytesReceived)
            #expect(task.bytesReceived > 100_000)
            #expect(result.taskCollection?.displayIdentifier == task.id)
            #expect(result.endpointCollection?.displayIdentifier == "/users")
            #expect(result.endpointCollection?.total == 400)
            #expect(task.state == .succeeded)
            #expect(task.statusCode == 200)
            #expect(task.duration != nil && task.startDate != nil && task.endDate != nil)
        }
    }

    @Test(
        "pages arrive in any order at their absolute positions; fields ask for what is missing",
        arguments: TransportKind.allCases)
    func pagesAndFields(_ kind: TransportKind) async throws {
        try await withServer { server, environment in
            let session = makeSession(environment, transport: kind)
            let third = try await session.send(.get, "/devices?offset=4&count=2&fields=name")
            #expect(third.endpointCollection?.items.count == 6)
            #expect(third.endpointCollection?.knownItems.count == 2)
            let first = try await session.send(.get, "/devices?count=2&offset=0&fields=name")
            #expect(first.endpointCollection?.knownItems.count == 4)
            #expect(first.endpointCollection?.total == server.state.deviceIDs.count)
            #expect(first.endpointCollection?.items.prefix(2).map { $0 } == server.state.deviceIDs.prefix(2).map { $0 })
            let id = try #require(first.items.first)
            let record = try #require(session.store.record(id: id))
            #expect(record.presentFields == ["name"])
            let missing = record.missingFields(for: ["name", "model", "os"])
            #expect(missing == ["uuid", "model", "os"])
            let fetched = try await session.send(.get, "/devices/\(id)?fields=\(missing.joined(separator: ","))")
            #expect(fetched.headers["ETag"] == "\"1\"")
            #expect(session.store.record(id: id)?.missingFields(for: ["name", "model", "os"]) == [])
            #expect(session.store.collections(kind: .task).count == 3)
        }
    }

    @Test("a body that is not valid JSON is a decoding error with its position; nothing is applied")
    func decodingError() async throws {
        try await withServer { server, environment in
            let session = makeSession(environment)
            server.knobs.respond("/devices", status: 200, body: Array(#"{"offset":0,"data":[{"uuid":"d-1",]}"#.utf8))
            let error = try #require(await failure(of: session.launch(.get, "/devices")))
            #expect(error.code == .decoding)
            #expect(error.ingest?.location?.offset ?? 0 > 0)
            server.knobs.respond("/users", status: 200, body: Array(#"[{"uuid":"u-x","age":"old"}]"#.utf8))
            let typed = try #require(await failure(of: session.launch(.get, "/users")))
            #expect(typed.code == .decoding)
            #expect(typed.ingest?.path == "$[0].age")
            #expect(session.store.count == 0)
            #expect(session.store.collections.isEmpty)
        }
    }
}
