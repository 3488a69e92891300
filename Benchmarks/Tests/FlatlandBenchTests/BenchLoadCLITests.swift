import FlatlandJSON
import FlatlandServer
import Foundation
import Testing

/// `flatland bench-load`, tiny: reads and writes both counted, under stable JSON keys, against
/// the embedded server (memory, a SQLite file) and a server given by URL.
@Suite("flatland bench-load")
struct BenchLoadCLITests {
    static let keys: Set<String> = [
        "instances", "storage", "connections", "duration_s", "rows", "read_requests", "read_per_s", "read_p50_ms",
        "read_p99_ms", "write_requests", "write_per_s", "write_p50_ms", "write_p99_ms", "errors",
    ]

    func load(_ arguments: [String]) throws -> JSONObject {
        let run = try CLI.run(
            ["bench-load", "--duration", "0.5", "--connections", "2", "--rows", "40", "--json"] + arguments)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        guard
            case .object(let report) = try JSONValue(
                parsing: run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw TableTestFailure(message: "not one JSON object: \(run.stdout)") }
        #expect(Set(report.keys) == BenchLoadCLITests.keys)
        for key in ["read_requests", "write_requests"] { #expect((integer(report[key]) ?? 0) > 0, "\(key)") }
        #expect(integer(report["errors"]) == 0)
        for key in ["read_per_s", "write_per_s", "read_p50_ms", "write_p99_ms"] {
            #expect((report[key]?.numberValue.flatMap { Double($0.text) } ?? 0) > 0, "\(key)")
        }
        return report
    }

    @Test func oneEmbeddedInstanceInMemory() throws {
        let report = try load([])
        #expect(integer(report["instances"]) == 1 && report["storage"]?.stringValue == "memory")
    }

    @Test func oneEmbeddedInstanceOnASQLiteFile() throws {
        let workspace = try Workspace()
        let file = workspace.url.appendingPathComponent("tables.sqlite").path
        let report = try load(["--tables-db", file])
        #expect(integer(report["instances"]) == 1 && report["storage"]?.stringValue == "sqlite")
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test func aServerGivenByURL() async throws {
        let server = SampleServer(
            configuration: .init(
                port: 0, population: .init(users: 0), tables: TableServing(protocols: [.v1, .v2, .v3])))
        let port = try await server.start()
        defer { Task { await server.stop() } }
        let report = try load(["--url", "http://127.0.0.1:\(port)"])
        #expect(report["storage"]?.stringValue == "external")
    }

    @Test func badOptionsAreUsageErrors() throws {
        for arguments in [
            ["--connections", "0"], ["--duration", "-1"], ["--url", "ftp://x"],
            ["--url", "http://a", "--instances", "2"],
        ] {
            let run = try CLI.run(["bench-load"] + arguments)
            #expect(run.status == 2, "\(arguments): \(run.stdout) \(run.stderr)")
        }
    }
}
