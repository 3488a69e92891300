import ArgumentParser
import Flatland
import FlatlandFixtures
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import Foundation

/// `flatland demo`: the README's main job. Starts the sample server on loopback and runs the
/// example SDK's flow against it with raw requests: register, me, devices page by page in any
/// order, a partial fetch with `fields`; then shows the store, the collections and the tasks; then
/// two devices of one user on the embedded table server: offline edits, one conflict settled by a
/// handler, and both ending equal to the server (``TwoDeviceDemo``).
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Start the sample server on loopback, run the example flow against it, show the store, "
            + "the collections and the task timings, then two devices syncing one table through a conflict."
    )

    @Option(help: "Users in the sample server's population.")
    var users = 24

    @Option(help: "Show where the parse/ingest speed comparison is at the end (0 skips it; it runs in flatland-bench).")
    var rounds = 3

    @Option(
        help: ArgumentHelp(
            "Where the table server of the two-device part keeps its rows: a SQLite file, or postgres://… "
                + "(once the server speaks PostgreSQL); in memory by default.",
            valueName: "path-or-url"))
    var tablesDb: String?

    @OptionGroup var transportOptions: TransportOptions

    func run() async throws {
        section("1. The sample server on loopback")
        let server = SampleServer(configuration: .init(population: .init(users: users)))
        let port = try await server.start()
        print(
            "  http://127.0.0.1:\(port): \(server.state.userIDs.count) users, \(server.state.deviceIDs.count) devices, "
                + "\(server.state.store.count(prefix: "s")) sessions")
        do {
            try await flow(server: server, port: port)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        section("10. Two devices of one user, offline, one conflict, then in sync")
        try await TwoDeviceDemo(tablesDB: tablesDb, transport: transportOptions.transport).run()
        if rounds > 0 { try speed() }
    }

    private func flow(server: SampleServer, port: Int) async throws {
        let environment = try Environment(name: "local", baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        // Users and devices are typed; the session object stays untyped (its JSON fields are
        // kept), as an SDK that has not declared it yet would see it.
        let session = Session(
            user: "ada", environment: environment, registry: try EntityRegistry([SeedUser.self, SeedDevice.self]),
            configuration: Backend.Configuration(makeTransport: transportOptions.transport.makeTransport))
        var tasks: [HTTPTask] = []
        func run(_ method: HTTPMethod, _ path: String, body: String? = nil) async throws -> HTTPResult {
            let task = session.launch(method, path, body: body.map { Array($0.utf8) })
            tasks.append(task)
            let result = try await task.value
            print("  \(method) \(path) -> \(result.status), \(result.items.count) top-level entities")
            return result
        }

        section("2. Register, confirm, me (session for ada on \(environment))")
        let registered = try await run(
            .post, "/session",
            body:
                #"{"email":"ada@example.com","firstname":"Ada","lastname":"Lovelace","device":{"name":"Ada's phone","model":"Pixel 8","os":"android"}}"#
        )
        let sessionID = registered.items.first ?? ""
        let token = session.store.record(id: sessionID)?.fields["token"]?.stringValue
        session.credentials.token = token
        print("  session \(sessionID), token \(token.map { String($0.prefix(12)) + "…" } ?? "-")")
        _ = try await run(.put, "/session")
        let me = try await run(.get, "/user/me")
        if let id = me.items.first, let user = session.store.entity(EntityID<SeedUser>(id)) {
            print("  me: \(user.id) \(user.firstname) \(user.lastname) <\(user.email)>, devices \(user.devices)")
        }

        section("3. Devices, page by page, in any order")
        for offset in [4, 0, 2] {
            let page = try await run(.get, "/devices?offset=\(offset)&count=2")
            let items = page.endpointCollection?.items ?? []
            let picture = items.map { $0 == nil ? "·" : "d" }.joined()
            print(
                "    endpoint /devices: [\(picture)] \(items.compactMap { $0 }.count) of \(page.endpointCollection?.total ?? 0)"
            )
        }

        section("4. A list screen fetches names only; the profile asks for exactly what is missing")
        let list = try await run(.get, "/users?offset=0&count=5&fields=firstname")
        if let id = list.items.first, let record = session.store.record(id: id) {
            // Another user's email is private (only its owner sees it): the profile shows public fields.
            let profile = ["firstname", "lastname", "age", "gender"]
            let missing = record.missingFields(for: profile)
            print("  \(id) has \(record.presentFields); the profile needs \(profile): ask for \(missing)")
            _ = try await run(.get, "/users/\(id)?fields=\(missing.joined(separator: ","))")
            let after = session.store.record(id: id)
            print("  now it has \(after?.presentFields ?? []), missing \(after?.missingFields(for: profile) ?? [])")
        }

        section("5. Three identical GETs at once: one request")
        let before = server.requestLog.count("GET", "/devices")
        let same = (0..<3).map { _ in session.launch(.get, "/devices?offset=0&count=6") }
        tasks.append(same[0])
        for task in same { _ = try await task.value }
        print(
            "  \(Set(same.map(\.id)).count) task, \(server.requestLog.count("GET", "/devices") - before) request to the server"
        )

        section("6. The store")
        print(
            "  "
                + session.store.countsByPrefix.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
                .joined(separator: ", "))

        section("7. The collections")
        for collection in session.store.collections.sorted(by: { $0.kind.rawValue < $1.kind.rawValue }) {
            print(
                "  \(collection.kind.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) "
                    + "\(collection.displayIdentifier): \(collection.knownItems.count) known of \(collection.total ?? 0)"
            )
        }

        section("8. The tasks")
        for task in tasks {
            let ms =
                task.duration.map {
                    formatted(Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000, 2)
                } ?? "-"
            print(
                "  \(task.id.prefix(10))…  \(task.request.method.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))"
                    + "\(task.state.rawValue) \(task.statusCode ?? 0)  \(ms) ms  \(task.bytesReceived) B in "
                    + "\(task.chunksReceived) chunk(s)  \(task.request.endpoint)")
        }

        section("9. Logout wipes the session's store")
        await session.logout()
        print("  records after logout: \(session.store.count); the server had \(server.requestLog.total) requests")
    }

    /// The speed comparison lives in the benchmark package, not in the shipped tool.
    private func speed() throws {
        section("11. Parse and ingest speed")
        print("  flatland-bench bench (in Benchmarks/: swift run -c release flatland-bench bench) compares")
        print("  FlatlandJSON parse and typed ingest with JSONDecoder on the same bytes")
    }

    private func section(_ title: String) { print("\n" + title) }
}
