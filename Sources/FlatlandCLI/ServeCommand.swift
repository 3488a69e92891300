import ArgumentParser
import FlatlandServer
import Foundation

/// `flatland serve`: the sample backend of the seed's API on loopback.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the sample backend of the seed's API (users, devices, sessions) until Ctrl-C.",
        discussion: """
            Starts with a seeded sample population, so a fresh server answers at once:
            curl 'http://127.0.0.1:8080/devices?offset=0&count=2'
            Emails and push tokens are shown only to their owner; writes to a user need that user's
            token (POST /session registers one, PUT /session confirms it). Timeouts, the connection
            cap and the bound on unconfirmed registrations keep it alive under hostile clients.
            """
    )

    @Option(help: "The port (0 picks a free one).")
    var port = 8080

    @Option(help: "The address to bind (loopback by default).")
    var host = "127.0.0.1"

    @Option(help: "How many users the sample population has (each with two devices).")
    var users = 24

    @Option(help: "The population's seed.")
    var seed: UInt64 = 0x5EED

    @Option(help: "Seconds a request's head may take once its first byte has arrived.")
    var headerTimeout = 10.0

    @Option(help: "Seconds a connection may stay idle (no request in progress, nothing received).")
    var idleTimeout = 60.0

    @Option(help: "The most connections open at once; past it new ones are closed.")
    var maxConnections = 512

    @Option(help: "The most registrations (POST /session) waiting for their PUT /session.")
    var maxPendingSessions = 1000

    @Option(help: "Seconds a registration may wait for its PUT /session before it expires.")
    var pendingSessionLifetime = 600.0

    func validate() throws {
        for (name, seconds) in [
            ("--header-timeout", headerTimeout), ("--idle-timeout", idleTimeout),
            ("--pending-session-lifetime", pendingSessionLifetime),
        ] where !(seconds > 0 && seconds <= 86_400 * 365) {
            throw ValidationError("\(name) must be a number of seconds above 0 (at most a year)")
        }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
        guard maxPendingSessions > 0 else {
            throw ValidationError("--max-pending-sessions must be positive")
        }
        guard users >= 0 else { throw ValidationError("--users must not be negative") }
    }

    func run() async throws {
        let limits = SampleServer.Limits(
            headerTimeout: .milliseconds(Int64(headerTimeout * 1000)),
            idleTimeout: .milliseconds(Int64(idleTimeout * 1000)), maxConnections: maxConnections,
            maxPendingSessions: maxPendingSessions,
            pendingSessionLifetime: .milliseconds(Int64(pendingSessionLifetime * 1000)))
        let server = SampleServer(
            configuration: .init(
                host: host, port: port, population: .init(users: users, seed: seed), limits: limits))
        let counts = "\(server.state.userIDs.count) users, \(server.state.deviceIDs.count) devices"
        let host = self.host
        try await server.run { port in
            FileHandleOutput.standardOutput.write(
                "flatland sample server on http://\(host):\(port) (\(counts)); Ctrl-C stops it\n"
                    + "try: curl 'http://\(host):\(port)/devices?offset=0&count=2'\n")
        }
    }
}
