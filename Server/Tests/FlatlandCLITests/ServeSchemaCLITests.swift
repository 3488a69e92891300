import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `flatland serve --table-schemas FILE`: a file it cannot use is a usage error that says why;
/// the tables it declares are served and checked.
@Suite("flatland serve --table-schemas")
struct ServeSchemaCLITests {
    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("schemas-\(UUID().uuidString).json")
            .path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(
        "a schema file it cannot use is a usage error naming the problem",
        arguments: [
            ("{\"movies\": {\"fields\": {\"year\": \"integer\"}}}", "movies.year: 'integer' is not a type"),
            ("{\"movies\": {\"fields\": {\"id\": \"string\"}}}", "'id' is reserved"),
            ("not json", "not JSON"),
        ])
    func aBadFileIsAUsageError(_ input: (String, String)) async throws {
        let path = try Self.file(input.0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try await CLI.run(["serve", "--port", "0", "--table-schemas", path])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--table-schemas: "), "\(run.stderr)")
        #expect(run.stderr.contains(input.1), "\(run.stderr)")
        let missing = try await CLI.run(["serve", "--port", "0", "--table-schemas", path + ".missing"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot read"), "\(missing.stderr)")
    }

    @Test func theOptionIsDocumented() async throws {
        let help = try await CLI.run(["serve", "--help"])
        #expect(help.stdout.contains("--table-schemas"))
    }

    @Test func theDeclaredTablesAreServedAndChecked() async throws {
        let path = try Self.file(
            #"{"movies": {"fields": {"title": "string", "year": {"type": "int", "index": true}}}}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = CLI.productsDirectory.appendingPathComponent("flatland")
        process.arguments = ["serve", "--port", "0", "--users", "0", "--table-schemas", path]
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
        func send(_ method: String, _ path: String, body: String? = nil) async throws -> (Int, String) {
            var request = URLRequest(url: try #require(URL(string: String(address) + path)))
            request.httpMethod = method
            request.setValue("3.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
            if let body {
                request.httpBody = Data(body.utf8)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            return (try #require(response as? HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
        }
        #expect(try await send("POST", "/tables/movies", body: #"{"title":"x","year":1994}"#).0 == 201)
        let refused = try await send("POST", "/tables/movies", body: #"{"title":"x","year":"1994"}"#)
        #expect(refused.0 == 400)
        #expect(refused.1.contains("'year'"))
        #expect(try await send("GET", "/tables/movies?$filter=missing%20eq%201").0 == 400)
        #expect(try await send("GET", "/tables/movies?$filter=year%20eq%201994").0 == 200)
        // The default table is still served beside it.
        #expect(try await send("GET", "/tables/todoitem").0 == 200)
    }
}
