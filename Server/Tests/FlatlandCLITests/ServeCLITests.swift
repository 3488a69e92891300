import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `flatland serve` exposes the server's limits, and refuses values that would leave it
/// unbounded or useless: usage, exit 2.
@Suite("flatland serve options")
struct ServeCLITests {
    @Test("every limit is an option with its default")
    func limitsAreOptions() async throws {
        let help = try await CLI.run(["serve", "--help"])
        #expect(help.status == 0)
        for (option, value) in [
            ("--header-timeout", "10.0"), ("--idle-timeout", "60.0"), ("--max-connections", "512"),
            ("--max-pending-sessions", "1000"), ("--pending-session-lifetime", "600.0"),
        ] {
            #expect(help.stdout.contains("\(option) <"), "\(option)")
            #expect(help.stdout.contains("(default: \(value))"), "\(option) \(value)")
        }
    }

    @Test(
        "a limit out of range is a usage error",
        arguments: [
            ["--header-timeout", "0"], ["--idle-timeout", "-1"], ["--idle-timeout", "nan"],
            ["--pending-session-lifetime", "1e12"], ["--max-connections", "0"], ["--max-pending-sessions", "0"],
        ])
    func outOfRange(_ option: [String]) async throws {
        let run = try await CLI.run(["serve", "--port", "0"] + option)
        #expect(run.status == 2)
        #expect(run.stderr.contains(option[0]))
    }
}

@Suite("flatland serve: the table options")
struct ServeTableOptionTests {
    @Test(
        "a bad table option is a usage error",
        arguments: [
            ["--tables", "a/b"], ["--tables", "x,X"], ["--tables", ""], ["--table-protocols", "v4"],
            ["--table-protocols", ""], ["--tables", "todoitem,notes:root"], ["--tables", "a:"],
            ["--tables-max-body", "0"], ["--tables-max-body", "-5"],
        ])
    func badTableOptions(_ option: [String]) async throws {
        let run = try await CLI.run(["serve", "--port", "0"] + option)
        #expect(run.status == 2)
        #expect(run.stderr.contains(option[0]))
    }

    @Test func theTableOptionsAreDocumented() async throws {
        let help = try await CLI.run(["serve", "--help"])
        for option in ["--tables", "--tables-db", "--table-protocols", "--tables-max-body", "per-user"] {
            #expect(help.stdout.contains(option))
        }
    }

    @Test func accessLevelsAndTheBodyLimitReachTheServer() async throws {
        let process = Process()
        process.executableURL = CLI.productsDirectory.appendingPathComponent("flatland")
        process.arguments = [
            "serve", "--port", "0", "--users", "2", "--tables", "todoitem,diary:per-user", "--tables-max-body", "64",
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        var banner = ""
        while !banner.contains("\n") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            banner += String(decoding: data, as: UTF8.self)
        }
        let address = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") })
        func status(_ method: String, _ path: String, body: String? = nil) async throws -> Int {
            var request = URLRequest(url: try #require(URL(string: String(address) + path)))
            request.httpMethod = method
            request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
            if let body {
                request.httpBody = Data(body.utf8)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            let (_, response) = try await URLSession.shared.data(for: request)
            return try #require(response as? HTTPURLResponse).statusCode
        }
        #expect(try await status("GET", "/tables/todoitem") == 200)
        #expect(try await status("GET", "/tables/diary") == 401)
        let body = #"{"id":"a","text":"\#(String(repeating: "x", count: 64))"}"#
        #expect(try await status("POST", "/tables/todoitem", body: body) == 413)
        #expect(try await status("POST", "/tables/todoitem", body: #"{"id":"a"}"#) == 201)
    }
}
