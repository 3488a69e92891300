import Foundation
import Testing

/// `flatland serve --tables-db postgres://…`: a URL it cannot use, or a database it cannot
/// reach, stops the start with one `error:` line and exit 1 (never a crash, never a hang).
@Suite("flatland serve --tables-db postgres://")
struct ServePostgresCLITests {
    @Test(
        "a bad PostgreSQL URL is an error at start",
        arguments: [
            ("postgres://127.0.0.1:5432/db", "no user"), ("postgres://me@127.0.0.1:5432", "no database"),
            ("postgresql://me@127.0.0.1:99999/db", "port"), ("postgres://me@127.0.0.1:54x/db", "port"),
            ("postgres://me@127.0.0.1/db?schema=a-b", "schema"), ("postgres://me@127.0.0.1/db?frob=1", "frob"),
        ])
    func badURL(_ input: (url: String, says: String)) async throws {
        let run = try await CLI.run(["serve", "--port", "0", "--users", "1", "--tables-db", input.url])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: --tables-db: "), "\(run.stderr)")
        #expect(run.stderr.contains(input.says), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(!run.stdout.contains("flatland sample server on"))
    }

    @Test("an unreachable database is an error at start, naming it without its password")
    func unreachable() async throws {
        let started = Date()
        // Nothing listens on port 1 of loopback.
        let run = try await CLI.run([
            "serve", "--port", "0", "--users", "1", "--tables-db", "postgres://me:secret@127.0.0.1:1/flatland",
        ])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: --tables-db: cannot connect to PostgreSQL at "), "\(run.stderr)")
        #expect(run.stderr.contains("127.0.0.1:1/flatland"))
        #expect(!run.stderr.contains("secret"))
        #expect(Date().timeIntervalSince(started) < 30)
    }

    @Test("a path that is not a postgres:// URL is still an SQLite file")
    func anythingElseIsAFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-dir-\(UUID())/t.sqlite").path
        let run = try await CLI.run(["serve", "--port", "0", "--users", "1", "--tables-db", path])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: --tables-db: cannot open the tables' database"), "\(run.stderr)")
    }
}
