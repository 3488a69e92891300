import Foundation
import Testing

/// `--transport` on the commands that talk HTTP: documented, checked, and the default per
/// platform.
@Suite("flatland --transport")
struct TransportCLITests {
    @Test("table, sync and demo document --transport and its two values", arguments: ["table", "sync", "demo"])
    func help(_ command: String) async throws {
        let run = try await CLI.run([command, "--help"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("--transport"))
        #expect(run.stdout.contains("urlsession"))
        #expect(run.stdout.contains("asynchttpclient"))
    }

    @Test("an unknown transport is a usage error (exit 2) that names the option; nothing is sent")
    func unknownTransport() async throws {
        let server = try TinyServer(status: "200 OK", body: "[]")
        defer { server.stop() }
        let workspace = try Workspace()
        let store = workspace.url.appendingPathComponent("a.sqlite").path
        for arguments in [
            ["table", "--url", server.url, "--transport", "curl", "todoitem", "list"],
            ["sync", "--store", store, "--url", server.url, "--transport", "curl", "pull", "todoitem"],
            ["demo", "--transport", "nio"],
        ] {
            let run = try await CLI.run(arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("--transport"), "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
        #expect(server.requests.isEmpty)
    }

    /// The two stacks send different header sets (libcurl adds its own): the default's request
    /// is AsyncHTTPClient's on Linux and URLSession's elsewhere.
    @Test("the default is asynchttpclient on Linux, urlsession elsewhere")
    func platformDefault() async throws {
        func headerNames(_ transport: [String]) async throws -> Set<String> {
            let server = try TinyServer(status: "200 OK", body: "[]")
            defer { server.stop() }
            let run = try await CLI.run(["table", "--url", server.url] + transport + ["todoitem", "list"])
            #expect(run.status == 0, "\(transport): \(run.stderr)")
            let head = try #require(server.requests.first)
            return Set(
                head.lowercased().components(separatedBy: "\r\n").dropFirst().compactMap { line in
                    line.firstIndex(of: ":").map { String(line[..<$0]) }
                })
        }
        let byDefault = try await headerNames([])
        let urlSession = try await headerNames(["--transport", "urlsession"])
        let asyncHTTPClient = try await headerNames(["--transport", "asynchttpclient"])
        #expect(urlSession != asyncHTTPClient, "the two transports are not told apart: \(urlSession)")
        #if os(Linux)
            #expect(byDefault == asyncHTTPClient)
        #else
            #expect(byDefault == urlSession)
        #endif
    }
}
