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

    func run() async throws {
        let server = SampleServer(
            configuration: .init(host: host, port: port, population: .init(users: users, seed: seed)))
        let counts = "\(server.state.userIDs.count) users, \(server.state.deviceIDs.count) devices"
        let host = self.host
        try await server.run { port in
            FileHandleOutput.standardOutput.write(
                "flatland sample server on http://\(host):\(port) (\(counts)); Ctrl-C stops it\n"
                    + "try: curl 'http://\(host):\(port)/devices?offset=0&count=2'\n")
        }
    }
}
