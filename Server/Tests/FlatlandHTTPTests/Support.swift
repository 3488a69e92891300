import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandServer
import Foundation
import Testing

/// Runs `body` against a sample server on 127.0.0.1, port 0, and stops it afterwards.
func withServer<R>(
    population: SampleState.Population = .init(users: 24),
    _ body: (SampleServer, FlatlandHTTP.Environment) async throws -> R
) async throws -> R {
    let server = SampleServer(configuration: .init(population: population))
    let port = try await server.start()
    do {
        let environment = try Environment(name: "local", baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        let result = try await body(server, environment)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// A session with the seed's user and device types; sessions stay untyped so their `token`
/// member can be read back.
/// `transport` replaces the configuration's transport when given.
func makeSession(
    _ environment: FlatlandHTTP.Environment, user: String = "ada",
    configuration: Backend.Configuration = Backend.Configuration(), transport: TransportKind? = nil
) -> Session {
    var configuration = configuration
    if let transport { configuration.makeTransport = transport.makeTransport }
    return Session(
        user: user, environment: environment, registry: try! EntityRegistry([SeedUser.self, SeedDevice.self]),
        configuration: configuration)
}

/// Waits (polling) until `condition` holds; fails after about ten seconds.
func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
    for _ in 0..<5000 {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(2))
    }
    Issue.record("timed out waiting until \(what)")
    throw CancellationError()
}

/// The result of `operation`, or nil when it has not ended after `seconds`: it then runs on,
/// left behind, so that a test can report an operation that hangs instead of hanging with it.
func boundedWait<R: Sendable>(seconds: Int, _ operation: @escaping @Sendable () async -> R) async throws -> R? {
    let (stream, continuation) = AsyncStream.makeStream(of: R?.self)
    let running = Task { continuation.yield(await operation()) }
    let timer = Task {
        try? await Task.sleep(for: .seconds(seconds))
        continuation.yield(nil)
    }
    defer {
        timer.cancel()
        _ = running
    }
    for await result in stream { return result }
    return nil
}

/// The error of a task that must fail.
func failure(of task: HTTPTask) async -> HTTPError? {
    do {
        _ = try await task.value
        return nil
    } catch {
        return error
    }
}

/// Registers and confirms a user; returns the session's user id.
@discardableResult
func register(_ session: Session, email: String, firstname: String) async throws -> String {
    let body = Array(
        #"{"email":"\#(email)","firstname":"\#(firstname)","device":{"name":"phone","model":"Pixel 8","os":"android"}}"#
            .utf8)
    let registered = try await session.send(.post, "/session", body: body)
    #expect(registered.status == 201)
    let sessionID = try #require(registered.items.first)
    let token = try #require(session.store.record(id: sessionID)?.fields["token"]?.stringValue)
    session.credentials.token = token
    let confirmed = try await session.send(.put, "/session")
    #expect(session.store.record(id: sessionID)?.fields["confirmed"] == .bool(true))
    #expect(confirmed.status == 200)
    let me = try await session.send(.get, "/user/me")
    return try #require(me.items.first)
}

/// Records the order in which filters run.
final class FilterLog: Sendable {
    private let lines = LockedLines()
    func add(_ line: String) { lines.append(line) }
    var entries: [String] { lines.all }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) {
        lock.lock()
        lines.append(line)
        lock.unlock()
    }
    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }
}
