import FlatlandJSON
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `flatland table`, driven as a user would, against `flatland serve` (every protocol served at
/// once) on a free loopback port.
@Suite("flatland table")
struct TableCLITests {
    static let protocols = ["v1", "v2", "v3"]

    @Test("insert, get, then list with a raw filter whose quote is doubled", arguments: protocols, transports)
    func insertGetList(_ version: String, transport: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: version, transport: transport)
        let inserted = try await client.one(client.run(["insert", #"{"id":"r1","text":"O'Hara","complete":false}"#]))
        #expect(inserted["id"] == "r1")
        #expect(inserted["text"] == "O'Hara")
        #expect(inserted.keys.first == "id")
        #expect(inserted[client.name("version")]?.stringValue?.isEmpty == false)
        _ = try await client.one(client.run(["insert", #"{"id":"r2","text":"Smith","complete":true}"#]))

        let got = try await client.one(client.run(["get", "r1"]))
        #expect(got == inserted)

        let all = try await client.rows(client.run(["list"]))
        #expect(Set(all.compactMap { $0["id"]?.stringValue }) == ["r1", "r2"])
        let filtered = try await client.rows(client.run(["list", "--filter", "text eq 'O''Hara'"]))
        #expect(filtered == [inserted])

        // A row without an id gets one of 32 lowercase hex digits.
        let generated = try await client.one(client.run(["insert", #"{"text":"no id"}"#]))
        let id = try #require(generated["id"]?.stringValue)
        #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(try await client.one(client.run(["get", id])) == generated)
    }

    @Test("list reads every page, each row once and in order", arguments: protocols, transports)
    func paging(_ version: String, transport: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: version, transport: transport)
        let count = 57
        for n in 0..<count {
            let run = try await client.run(["insert", #"{"id":"p\#(n)","n":\#(n)}"#])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let ordered = try await client.rows(client.run(["list", "--order-by", "n"]))
        #expect(ordered.map { $0["n"] } == (0..<count).map { .number(JSONNumber($0)) })
        let unordered = try await client.rows(client.run(["list"]))
        let ids = unordered.compactMap { $0["id"]?.stringValue }
        #expect(ids.count == count)
        #expect(Set(ids) == Set((0..<count).map { "p\($0)" }))

        let window = try await client.rows(client.run(["list", "--order-by", "n desc", "--top", "3", "--skip", "1"]))
        #expect(window.map { $0["n"] } == [55, 54, 53].map { .number(JSONNumber($0)) })
        let pastFirstPage = try await client.rows(client.run(["list", "--order-by", "n", "--skip", "50"]))
        #expect(pastFirstPage.map { $0["n"] } == (50..<count).map { .number(JSONNumber($0)) })
    }

    @Test("several --order-by terms, and --select", arguments: protocols)
    func orderAndSelect(_ version: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: version)
        for (id, g, n) in [("a", 1, 1), ("b", 2, 1), ("c", 1, 2), ("d", 2, 2)] {
            _ = try await client.one(client.run(["insert", #"{"id":"\#(id)","g":\#(g),"n":\#(n),"text":"t"}"#]))
        }
        let ordered = try await client.rows(client.run(["list", "--order-by", "g desc", "--order-by", "n"]))
        #expect(ordered.compactMap { $0["id"]?.stringValue } == ["b", "d", "a", "c"])
        let reversed = try await client.rows(client.run(["list", "--order-by", "n desc", "--order-by", "g desc"]))
        #expect(reversed.compactMap { $0["id"]?.stringValue } == ["d", "c", "b", "a"])

        let selected = try await client.rows(
            client.run(["list", "--select", "n,text", "--order-by", "n", "--top", "2"]))
        #expect(selected.count == 2)
        for row in selected { #expect(Set(row.keys) == ["id", "n", "text"]) }
    }

    @Test("a deleted row shows with --include-deleted only; get of it exits 4", arguments: protocols)
    func includeDeleted(_ version: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: version)
        _ = try await client.one(client.run(["insert", #"{"id":"x","text":"gone soon"}"#]))
        _ = try await client.one(client.run(["insert", #"{"id":"y","text":"stays"}"#]))
        let delete = try await client.run(["delete", "x"])
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(delete.stdout.isEmpty)

        let live = try await client.rows(client.run(["list"]))
        #expect(live.compactMap { $0["id"]?.stringValue } == ["y"])
        let all = try await client.rows(client.run(["list", "--include-deleted", "--order-by", "id"]))
        #expect(all.compactMap { $0["id"]?.stringValue } == ["x", "y"])
        #expect(all.first?[client.name("deleted")] == true)
        #expect(all.last?[client.name("deleted")] == false)

        let get = try await client.run(["get", "x"])
        #expect(get.status == 4)
        #expect(get.stdout.isEmpty)
    }

    @Test("update with the current version, then with a stale one: exit 3 and the server's row", arguments: protocols)
    func updateConcurrency(_ version: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: version)
        let versionName = client.name("version")
        let first = try await client.one(client.run(["insert", #"{"id":"u","text":"a"}"#]))
        let v0 = try #require(first[versionName]?.stringValue)

        let updated = try await client.one(
            client.run(["update", #"{"id":"u","text":"b","\#(versionName)":"\#(v0)"}"#]))
        #expect(updated["text"] == "b")
        let v1 = try #require(updated[versionName]?.stringValue)
        #expect(v1 != v0)

        let stale = try await client.run(["update", #"{"id":"u","text":"c","\#(versionName)":"\#(v0)"}"#])
        #expect(stale.status == 3)
        try expectConflictLine(stale, status: 412, serverItem: updated)
        #expect(try await client.one(client.run(["get", "u"]))["text"] == "b")

        let missing = try await client.run(["update", #"{"id":"nope","text":"c"}"#])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("error: "))
    }

    @Test("insert of an existing id: exit 3 and the 409 line with the existing row", arguments: protocols)
    func insertExisting(_ version: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: version)
        let row = try await client.one(client.run(["insert", #"{"id":"e","text":"first"}"#]))
        let again = try await client.run(["insert", #"{"id":"e","text":"second"}"#])
        #expect(again.status == 3)
        try expectConflictLine(again, status: 409, serverItem: row)
    }

    @Test("get of a missing id exits 4; delete with --version sends If-Match", arguments: protocols)
    func getMissingAndDeleteWithVersion(_ version: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: version)
        let missing = try await client.run(["get", "nowhere"])
        #expect(missing.status == 4)
        #expect(missing.stdout.isEmpty)
        let deleteMissing = try await client.run(["delete", "nowhere"])
        #expect(deleteMissing.status == 1)
        #expect(deleteMissing.stderr.hasPrefix("error: "))

        let versionName = client.name("version")
        let row = try await client.one(client.run(["insert", #"{"id":"d","text":"a"}"#]))
        let v0 = try #require(row[versionName]?.stringValue)
        let updated = try await client.one(client.run(["update", #"{"id":"d","text":"b"}"#]))
        let v1 = try #require(updated[versionName]?.stringValue)

        let stale = try await client.run(["delete", "d", "--version", v0])
        #expect(stale.status == 3)
        try expectConflictLine(stale, status: 412, serverItem: updated)
        let delete = try await client.run(["delete", "d", "--version", v1])
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(delete.stdout.isEmpty)
        #expect(try await client.run(["get", "d"]).status == 4)
    }

    @Test(
        "v1 with --system-properties: the rows carry those and no other system property",
        arguments: ["updatedAt,deleted", "__updatedAt,__deleted"])
    func v1SystemProperties(_ list: String) async throws {
        let server = try TableServer()
        let client = TableClient(server: server, version: "v1", systemProperties: list)
        let inserted = try await client.one(client.run(["insert", #"{"id":"s","text":"a"}"#]))
        let got = try await client.one(client.run(["get", "s"]))
        let listed = try await client.rows(client.run(["list"]))
        #expect(listed.count == 1)
        for row in [inserted, got] + listed {
            #expect(Set(row.keys.filter { $0.hasPrefix("__") }) == ["__updatedAt", "__deleted"], "\(row)")
            #expect(row["text"] == "a")
        }
        // Without the option a v1 server sends no system property at all.
        let plain = TableClient(server: server, version: "v1", systemProperties: nil)
        let bare = try await plain.one(plain.run(["get", "s"]))
        #expect(Set(bare.keys) == ["id", "text"])
    }

    @Test("--app-key and --system-properties reach the server", arguments: protocols)
    func appKeyHeader(_ version: String) async throws {
        let server = try TinyServer(status: "200 OK", body: "[]")
        defer { server.stop() }
        var options = ["--url", server.url, "--protocol", version, "--app-key", "s3cret"]
        if version == "v1" { options += ["--system-properties", "updatedAt,deleted"] }
        let run = try await CLI.run(["table"] + options + ["todoitem", "list"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        let head = try #require(server.requests.first).lowercased()
        #expect(head.hasPrefix("get /tables/todoitem"))
        #expect(head.contains("\r\nx-zumo-application: s3cret\r\n"))
        if version == "v1" {
            #expect(head.contains("__systemproperties=__updatedat%2c__deleted"))
            #expect(!head.contains("zumo-api-version"))
        } else {
            #expect(head.contains("\r\nzumo-api-version: \(version == "v2" ? "2.0.0" : "3.0.0")\r\n"))
        }
    }

    @Test("a server error (5xx) exits 1 with error: on stderr", arguments: transports)
    func serverError(_ transport: String) async throws {
        let server = try TinyServer(status: "500 Internal Server Error", body: #"{"error":"boom"}"#)
        defer { server.stop() }
        for verb in [["list"], ["get", "a"], ["insert", "{}"], ["delete", "a"]] {
            let run = try await CLI.run(
                ["table", "--url", server.url] + transportOption(transport) + ["todoitem"] + verb)
            #expect(run.status == 1, "\(verb)")
            #expect(run.stderr.hasPrefix("error: "), "\(verb)")
            #expect(run.stdout.isEmpty, "\(verb)")
        }
    }

    @Test("a table the server does not have: exit 1 with the server's words")
    func unknownTable() async throws {
        let server = try TableServer()
        let run = try await TableClient(server: server, version: "v2").run(["list"], table: "nosuch")
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: "))
        #expect(run.stderr.contains("no table 'nosuch'"))
    }

    @Test(
        "an answer that is not the row asked for exits 1",
        arguments: [("200 OK", "[]"), ("200 OK", "not json"), ("404 Not Found", "{}")])
    func badAnswer(_ status: String, _ body: String) async throws {
        let server = try TinyServer(status: status, body: body)
        defer { server.stop() }
        let run = try await CLI.run(["table", "--url", server.url, "todoitem", "update", #"{"id":"a"}"#])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: "))
        #expect(run.stdout.isEmpty)
    }

    @Test("a server that is down: exit 1, error: on stderr")
    func serverDown() async throws {
        let closed = try TinyServer(status: "200 OK", body: "[]")
        closed.stop()
        let run = try await CLI.run(["table", "--url", closed.url, "todoitem", "list"])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: "))
        #expect(run.stdout.isEmpty)
    }

    @Test(
        "usage errors exit 2 before anything is sent",
        arguments: [
            ["todoitem", "list"],  // no --url
            ["--url", "ftp://127.0.0.1:1", "todoitem", "list"],
            ["--url", "@URL", "--protocol", "v4", "todoitem", "list"],
            ["--url", "@URL", "--system-properties", "updatedAt", "todoitem", "list"],
            ["--url", "@URL", "--protocol", "v3", "--system-properties", "*", "todoitem", "list"],
            ["--url", "@URL", "--protocol", "v1", "--system-properties", "colour", "todoitem", "list"],
            ["--url", "@URL", "todoitem"],
            ["--url", "@URL", "todoitem", "frobnicate"],
            ["--url", "@URL", "todoitem", "insert", "{not json"],
            ["--url", "@URL", "todoitem", "insert", "[1,2]"],
            ["--url", "@URL", "todoitem", "insert"],
            ["--url", "@URL", "todoitem", "update", #"{"text":"no id"}"#],
            ["--url", "@URL", "todoitem", "get"],
            ["--url", "@URL", "todoitem", "get", "a", "b"],
            ["--url", "@URL", "todoitem", "get", "a", "--version", "v"],
            ["--url", "@URL", "todoitem", "list", "--top", "-1"],
            ["--url", "@URL", "todoitem", "list", "--skip", "x"],
            ["--url", "@URL", "todoitem", "list", "--order-by", "a b c"],
            ["--url", "@URL", "todoitem", "list", "--select", "a,,b"],
            ["--url", "@URL", "todoitem", "list", "--bogus"],
            ["--url", "@URL", "--protocol", "v1", "todoitem", "insert", #"{"__owner":"me"}"#],
        ])
    func usageErrors(_ arguments: [String]) async throws {
        // A port nothing listens on: an error that reached the network would exit 1, not 2.
        let closed = try TinyServer(status: "200 OK", body: "[]")
        closed.stop()
        let run = try await CLI.run(["table"] + arguments.map { $0 == "@URL" ? closed.url : $0 })
        #expect(run.status == 2, "\(run.stderr)")
        #expect(!run.stderr.isEmpty)
        #expect(run.stdout.isEmpty)
    }

    @Test("the help names the verbs, the options and the exit codes")
    func help() async throws {
        let help = try await CLI.run(["table", "--help"])
        #expect(help.status == 0)
        for word in ["--url", "--protocol", "--app-key", "--system-properties", "list", "insert", "delete", "412"] {
            #expect(help.stdout.contains(word), "\(word)")
        }
        let listHelp = try await CLI.run(["table", "--url", "http://127.0.0.1:1", "todoitem", "list", "--help"])
        #expect(listHelp.status == 0)
        #expect(listHelp.stdout.contains("--order-by"))
    }

    /// The one stdout line of a 412 or 409: `{"status":N,"serverItem":{…}}`, the item the server's row.
    func expectConflictLine(_ run: CLIRun, status: Int, serverItem: JSONObject) throws {
        #expect(run.stdout.hasPrefix(#"{"status":\#(status),"serverItem":{"#))
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        guard case .object(let line) = try JSONValue(parsing: String(try #require(lines.first))) else {
            Issue.record("not an object: \(run.stdout)")
            return
        }
        #expect(line.keys == ["status", "serverItem"])
        #expect(line["status"] == .number(JSONNumber(status)))
        #expect(line["serverItem"] == .object(serverItem))
    }
}

/// Runs `flatland table` against one server with one protocol.
struct TableClient {
    let server: TableServer
    let version: String
    /// v1's `--system-properties` (every one by default).
    var systemProperties: String? = "*"
    /// `--transport`, or nil for the default.
    var transport: String?

    init(server: TableServer, version: String, systemProperties: String? = "*", transport: String? = nil) {
        self.server = server
        self.version = version
        self.systemProperties = systemProperties
        self.transport = transport
    }

    func run(_ verb: [String], table: String = "todoitem") async throws -> CLIRun {
        var options = ["--url", server.url, "--protocol", version] + transportOption(transport)
        if version == "v1", let systemProperties { options += ["--system-properties", systemProperties] }
        return try await CLI.run(["table"] + options + [table] + verb)
    }

    /// A system property's name in this protocol.
    func name(_ property: String) -> String { version == "v1" ? "__" + property : property }

    /// The rows a successful run printed, one per line.
    func rows(_ run: CLIRun) throws -> [JSONObject] {
        #expect(run.status == 0, "\(run.stderr)")
        return try run.stdout.split(separator: "\n").map { line in
            guard case .object(let row) = try JSONValue(parsing: String(line)) else {
                throw TableTestFailure(message: "not a JSON object: \(line)")
            }
            return row
        }
    }

    /// The one row a successful run printed.
    func one(_ run: CLIRun) throws -> JSONObject {
        let rows = try rows(run)
        guard rows.count == 1, let row = rows.first else {
            throw TableTestFailure(message: "expected one row, got: \(run.stdout) \(run.stderr)")
        }
        return row
    }
}

struct TableTestFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// `flatland serve` in a child process on a free loopback port, serving v1, v2 and v3 tables;
/// stopped when released.
final class TableServer {
    let process: Process
    let url: String

    init() throws {
        let process = Process()
        process.executableURL = CLI.productsDirectory.appendingPathComponent("flatland")
        process.arguments = ["serve", "--port", "0", "--users", "0", "--table-protocols", "v1,v2,v3"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
        guard let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) else {
            process.terminate()
            throw TableTestFailure(message: "flatland serve did not start: \(text)")
        }
        self.process = process
        url = String(text[range])
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }
}

/// A loopback HTTP server of a few lines that answers every request with one fixed response and
/// keeps each request's head, to see what the client sent.
final class TinyServer: @unchecked Sendable {
    let url: String
    private let socket: Int32
    private let received = ReceivedHeads()

    init(status: String, body: String) throws {
        // Close-on-exec: a `flatland` child that another test starts meanwhile must not keep the
        // port listening after ``stop()``.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.socket = socket
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(socket, address, length) == 0 && listen(socket, 16) == 0
                    && getsockname(socket, address, &length) == 0
            }
        }
        guard socket >= 0, bound else { throw TableTestFailure(message: "no loopback socket: errno \(errno)") }
        url = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        let response = Array(
            ("HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(body)").utf8)
        let received = received
        Thread.detachNewThread { Self.serve(socket, response, received) }
    }

    /// The heads of the requests received so far.
    var requests: [String] { received.heads }

    /// Stops listening: the port then refuses connections.
    ///
    /// The serving thread closes the socket when its `accept` fails, not this: closed here, the
    /// descriptor's number could go to another test's new socket before the thread's next
    /// `accept`, which would then answer that test's requests with this server's response.
    func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
    }

    private static func serve(_ socket: Int32, _ response: [UInt8], _ received: ReceivedHeads) {
        defer { close(socket) }
        while true {
            let connection = accept(socket, nil, nil)
            if connection < 0 { return }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            var head: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while head.count < 65_536, !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
                let n = recv(connection, &buffer, buffer.count, 0)
                if n <= 0 { break }
                head += buffer[0..<n]
            }
            let text = String(decoding: head, as: UTF8.self)
            received.append(text)
            // The request's body is read too: closing with unread bytes would reset the
            // connection, and the client could lose the answer.
            if let end = text.range(of: "\r\n\r\n"),
                let line = text[..<end.lowerBound].lowercased().components(separatedBy: "\r\n")
                    .first(where: { $0.hasPrefix("content-length:") }),
                let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
            {
                var read = head.count - text[..<end.upperBound].utf8.count
                while read < length {
                    let n = recv(connection, &buffer, buffer.count, 0)
                    if n <= 0 { break }
                    read += n
                }
            }
            _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(connection)
        }
    }
}

/// The request heads a ``TinyServer`` received, shared with its thread.
final class ReceivedHeads: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []

    var heads: [String] { lock.withLock { list } }

    func append(_ head: String) { lock.withLock { list.append(head) } }
}
