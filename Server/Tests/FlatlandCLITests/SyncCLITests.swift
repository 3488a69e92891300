import FlatlandJSON
import Foundation
import Testing

/// `flatland local` and `flatland sync`, driven as a user would, against `flatland serve` (every
/// protocol served at once) on a free loopback port; each device is its own store file.
@Suite("flatland local and flatland sync")
struct SyncCLITests {
    static let protocols = ["v1", "v2", "v3"]

    @Test("local insert, update, delete, get and list, and the queue they leave")
    func localWritesAndQueue() async throws {
        let workspace = try Workspace()
        let device = SyncDevice(workspace: workspace, file: "a.sqlite", url: "http://127.0.0.1:1")
        let a = try await device.one(device.local(["todoitem", "insert", #"{"id":"a","text":"A"}"#]))
        #expect(a["id"] == "a")
        #expect(a["text"] == "A")
        let generated = try await device.one(device.local(["todoitem", "insert", #"{"text":"no id"}"#]))
        let b = try #require(generated["id"]?.stringValue)
        #expect(!b.isEmpty)
        let updated = try await device.one(device.local(["todoitem", "update", #"{"id":"a","done":true}"#]))
        #expect(updated["text"] == "A")  // merged, as a PATCH
        #expect(updated["done"] == true)
        #expect(try await device.one(device.local(["todoitem", "get", "a"])) == updated)
        let listed = try await device.lines(device.local(["todoitem", "list"]))
        #expect(Set(listed.compactMap { $0["id"]?.stringValue }) == ["a", b])

        // insert + update is one insert; insert + delete is nothing.
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"c","text":"C"}"#]))
        let delete = try await device.local(["todoitem", "delete", "c"])
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(delete.stdout.isEmpty)
        let pending = try await device.lines(device.sync(["pending"]))
        #expect(pending.map { $0["id"]?.stringValue } == ["a", b])
        #expect(pending.map { $0["kind"] } == ["insert", "insert"])
        #expect(pending.map { $0["state"] } == ["pending", "pending"])
        #expect(pending.map { $0["table"] } == ["todoitem", "todoitem"])
        #expect(pending.allSatisfy { Set($0.keys) == ["sequence", "table", "id", "kind", "state"] })
        let sequences = pending.compactMap { integer($0["sequence"]) }
        #expect(sequences.count == 2 && sequences == sequences.sorted())

        // get of a row not there exits 4; the refusals exit 1 with error: and change nothing.
        let missing = try await device.local(["todoitem", "get", "c"])
        #expect(missing.status == 4)
        #expect(missing.stdout.isEmpty)
        #expect(missing.stderr.hasPrefix("error: "))
        for refused in [
            ["insert", #"{"id":"a","text":"again"}"#],  // an insert after an insert
            ["update", #"{"id":"nope","text":"x"}"#],  // no such row
            ["update", #"{"id":"a","version":"stale","text":"x"}"#],  // a stale version
            ["delete", "a", "--version", "stale"],
            ["delete", "nope"],
        ] {
            let run = try await device.local(["todoitem"] + refused)
            #expect(run.status == 1, "\(refused): \(run.stdout) \(run.stderr)")
            #expect(run.stderr.hasPrefix("error: "), "\(refused)")
        }
        #expect(try await device.one(device.local(["todoitem", "get", "a"])) == updated)
        #expect(try await device.lines(device.sync(["pending"])) == pending)
        #expect(try await device.lines(device.sync(["errors"])).isEmpty)

        // Another table of the same file is its own.
        #expect(try await device.lines(device.local(["other", "list"])).isEmpty)
    }

    @Test("push sends the queue in order and prints one line per operation", arguments: protocols, transports)
    func push(_ version: String, transport: String) async throws {
        let server = try TableServer()
        let workspace = try Workspace()
        let device = SyncDevice(
            workspace: workspace, file: "a.sqlite", url: server.url, version: version, transport: transport)
        let online = TableClient(server: server, version: version)
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"p1","text":"one"}"#]))
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"p2","text":"two"}"#]))
        let run = try await device.sync(["push"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try device.lines(run)
        #expect(lines.map { $0["id"]?.stringValue } == ["p1", "p2"])
        #expect(lines.allSatisfy { $0["result"] == "ok" && $0["kind"] == "insert" && $0["table"] == "todoitem" })
        #expect(lines.allSatisfy { [200, 201].contains(integer($0["status"])) })
        #expect(lines.allSatisfy { Set($0.keys) == ["sequence", "table", "id", "kind", "status", "result"] })
        #expect(try await device.lines(device.sync(["pending"])).isEmpty)
        #expect(try await online.one(online.run(["get", "p2"]))["text"] == "two")
        // The server's answer is stored: the row has its version now.
        let stored = try await device.one(device.local(["todoitem", "get", "p1"]))
        #expect(stored[online.name("version")]?.stringValue?.isEmpty == false)

        // An update and a delete, then a push with nothing left: no line, exit 0.
        try await device.lines(device.local(["todoitem", "update", #"{"id":"p1","text":"one!"}"#]))
        try await device.lines(device.local(["todoitem", "delete", "p2"]))
        let second = try await device.lines(device.sync(["push"]))
        #expect(second.map { $0["kind"] } == ["update", "delete"])
        #expect(second.allSatisfy { $0["result"] == "ok" })
        #expect(try await online.one(online.run(["get", "p1"]))["text"] == "one!")
        #expect(try await online.run(["get", "p2"]).status == 4)
        let empty = try await device.sync(["push"])
        #expect(empty.status == 0 && empty.stdout.isEmpty, "\(empty.stderr)")
    }

    @Test(
        "a conflict made by a second device, settled by each --on-conflict",
        arguments: ["client-wins", "server-wins", "fail"])
    func conflict(_ rule: String) async throws {
        let server = try TableServer()
        let workspace = try Workspace()
        let online = TableClient(server: server, version: "v2")
        let first = SyncDevice(workspace: workspace, file: "first.sqlite", url: server.url)
        let second = SyncDevice(workspace: workspace, file: "second.sqlite", url: server.url)
        try await first.lines(first.local(["todoitem", "insert", #"{"id":"r","text":"original"}"#]))
        #expect(try await first.sync(["push"]).status == 0)
        let pulled = try await second.one(second.sync(["pull", "todoitem"]))
        #expect(pulled["rows"] == 1)
        // Both edit the same version; the first pushes first.
        try await first.lines(first.local(["todoitem", "update", #"{"id":"r","text":"first"}"#]))
        try await second.lines(second.local(["todoitem", "update", #"{"id":"r","text":"second"}"#]))
        #expect(try await first.sync(["push"]).status == 0)

        let run = try await second.sync(["push", "--on-conflict", rule])
        let line = try second.one(run, exit: rule == "fail" ? 3 : 0)
        #expect(line["id"] == "r")
        #expect(line["kind"] == "update")
        switch rule {
        case "client-wins":
            #expect(run.status == 0, "\(run.stderr)")
            #expect(line["result"] == "resolved")
            #expect(try await online.one(online.run(["get", "r"]))["text"] == "second")
            #expect(try await second.lines(second.sync(["pending"])).isEmpty)
        case "server-wins":
            #expect(run.status == 0, "\(run.stderr)")
            #expect(line["result"] == "resolved")
            #expect(try await online.one(online.run(["get", "r"]))["text"] == "first")
            #expect(try await second.one(second.local(["todoitem", "get", "r"]))["text"] == "first")
            #expect(try await second.lines(second.sync(["pending"])).isEmpty)
        default:
            #expect(run.status == 3, "\(run.stdout) \(run.stderr)")
            #expect(line["result"] == "conflict")
            #expect(line["status"] == 412)
            let pending = try await second.one(second.sync(["pending"]))
            #expect(pending["state"] == "failed")
            let error = try await second.one(second.sync(["errors"]))
            #expect(error["status"] == 412)
            #expect(error["id"] == "r")
            guard case .object(let serverItem)? = error["serverItem"] else {
                Issue.record("no serverItem in \(error)")
                return
            }
            #expect(serverItem["text"] == "first")
            #expect(try await online.one(online.run(["get", "r"]))["text"] == "first")
            // A pull whose push first fails exits as that push would, and prints its line.
            let pull = try await second.sync(["pull", "todoitem"])
            #expect(try second.one(pull, exit: 3)["result"] == "conflict")
            #expect(try await second.one(second.local(["todoitem", "get", "r"]))["text"] == "second")
        }
    }

    @Test(
        "pull with a query id brings only changes; deleted rows go; a filter narrows it", arguments: protocols,
        transports)
    func incrementalPull(_ version: String, transport: String) async throws {
        let server = try TableServer()
        let workspace = try Workspace()
        let online = TableClient(server: server, version: version)
        let device = SyncDevice(
            workspace: workspace, file: "a.sqlite", url: server.url, version: version, transport: transport)
        for n in 1...5 {
            _ = try await online.one(online.run(["insert", #"{"id":"r\#(n)","n":\#(n)}"#]))
        }
        let firstRun = try await device.sync(["pull", "todoitem", "--query-id", "all", "--page-size", "2"])
        let first = try device.one(firstRun)
        // Progress on stderr, a line per page: a pull by key asks for --page-size rows in every
        // protocol (v3 too), and once more after the last row.
        #expect(firstRun.stderr.contains("pull todoitem: page 1, 2 rows"), "\(firstRun.stderr)")
        #expect(firstRun.stderr.contains("pull todoitem: page 3,"), "\(firstRun.stderr)")
        #expect(first["table"] == "todoitem")
        // rows counts what the server sent: re-paged from each page's newest updatedAt, a page
        // may start with the row that ended the one before.
        #expect((integer(first["rows"]) ?? 0) >= 5)
        #expect((integer(first["pages"]) ?? 0) >= 3)
        #expect(first["deleted"] == 0)
        #expect(first["skipped"] == 0)
        #expect(first["token"]?.stringValue?.isEmpty == false)
        #expect(Set(first.keys) == ["table", "pages", "rows", "deleted", "skipped", "token"])
        #expect(try await device.lines(device.local(["todoitem", "list"])).count == 5)

        // Nothing changed: at most the newest row again (v1 and v2 ask with ge; v3's gt compares
        // at the millisecond precision of its date literal, the server keeps microseconds).
        let again = try await device.one(device.sync(["pull", "todoitem", "--query-id", "all"]))
        #expect((integer(again["rows"]) ?? 99) <= 1)
        #expect(again["deleted"] == 0)
        #expect(again["token"] == first["token"])

        // A change and a delete on the server: the next pull brings just those.
        _ = try await online.one(online.run(["update", #"{"id":"r2","n":20}"#]))
        #expect(try await online.run(["delete", "r3"]).status == 0)
        let changes = try await device.one(device.sync(["pull", "todoitem", "--query-id", "all"]))
        let rows = integer(changes["rows"]) ?? 0
        #expect(rows >= 2 && rows <= 3)
        #expect(changes["deleted"] == 1)
        let local = try await device.lines(device.local(["todoitem", "list"]))
        #expect(Set(local.compactMap { $0["id"]?.stringValue }) == ["r1", "r2", "r4", "r5"])
        #expect(try await device.one(device.local(["todoitem", "get", "r2"]))["n"] == 20)

        // Without a query id a pull is a full read of the query; a filter narrows it.
        let other = SyncDevice(workspace: workspace, file: "b.sqlite", url: server.url, version: version)
        let filtered = try await other.one(other.sync(["pull", "todoitem", "--filter", "n ge 4"]))
        #expect(filtered["rows"] == 3)  // r2 (n is 20 now), r4, r5
        #expect(filtered["token"] == .null)
        let narrowed = try await other.lines(other.local(["todoitem", "list"]))
        #expect(Set(narrowed.compactMap { $0["id"]?.stringValue }) == ["r2", "r4", "r5"])
    }

    @Test("a pull with local changes pushes them first; purge is refused with operations queued, then forced")
    func pullPushesFirstAndPurge() async throws {
        let server = try TableServer()
        let workspace = try Workspace()
        let online = TableClient(server: server, version: "v2")
        let device = SyncDevice(workspace: workspace, file: "a.sqlite", url: server.url)
        _ = try await online.one(online.run(["insert", #"{"id":"s","text":"server"}"#]))
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"l","text":"local"}"#]))
        let pull = try await device.sync(["pull", "todoitem", "--query-id", "q"])
        #expect(pull.status == 0, "\(pull.stderr)")
        #expect(try device.one(pull)["rows"] == 2)
        #expect(try await device.lines(device.sync(["pending"])).isEmpty)
        #expect(try await online.one(online.run(["get", "l"]))["text"] == "local")
        #expect(try await device.lines(device.local(["todoitem", "list"])).count == 2)

        try await device.lines(device.local(["todoitem", "update", #"{"id":"s","text":"edited"}"#]))
        let refused = try await device.sync(["purge", "todoitem"])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("error: "))
        #expect(try await device.lines(device.sync(["pending"])).count == 1)
        #expect(try await device.lines(device.local(["todoitem", "list"])).count == 2)

        // Purging one query only resets its token: the next pull of it reads everything again.
        let purgeQuery = try await device.sync(["purge", "todoitem", "--query-id", "q"])
        #expect(purgeQuery.status == 0, "\(purgeQuery.stderr)")

        // purge needs no --url.
        let forced = try await CLI.run(["sync", "--store", device.path, "purge", "todoitem", "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(forced.stdout.isEmpty)
        #expect(try await device.lines(device.sync(["pending"])).isEmpty)
        #expect(try await device.lines(device.local(["todoitem", "list"])).isEmpty)
        let full = try await device.one(device.sync(["pull", "todoitem", "--query-id", "q"]))
        #expect(full["rows"] == 2)
        #expect(try await device.one(device.local(["todoitem", "get", "s"]))["text"] == "server")
    }

    @Test(
        "reconcile removes the rows the server no longer has, never rows with queued changes",
        arguments: ["listing", "get"])
    func reconcile(_ method: String) async throws {
        let workspace = try Workspace()
        let before = try TableServer()
        let device = SyncDevice(workspace: workspace, file: "a.sqlite", url: before.url)
        let online = TableClient(server: before, version: "v2")
        for id in ["r1", "r2", "r3"] {
            _ = try await online.one(online.run(["insert", #"{"id":"\#(id)","text":"t"}"#]))
        }
        #expect(try await device.one(device.sync(["pull", "todoitem", "--query-id", "all"]))["rows"] == 3)
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"mine","text":"not pushed"}"#]))

        // The same table, where r2 is gone for good (hard-deleted: no pull ever hears of it).
        let after = try TableServer()
        let now = TableClient(server: after, version: "v2")
        for id in ["r1", "r3"] { _ = try await now.one(now.run(["insert", #"{"id":"\#(id)","text":"t"}"#])) }
        let moved = SyncDevice(workspace: workspace, file: "a.sqlite", url: after.url)
        var arguments = ["reconcile", "todoitem"]
        if method != "listing" { arguments += ["--by", method] }
        let result = try await moved.one(moved.sync(arguments))
        #expect(result == ["table": "todoitem", "checked": 3, "removed": 1])
        #expect(result.keys == ["table", "checked", "removed"])
        let local = try await moved.lines(moved.local(["todoitem", "list"]))
        #expect(Set(local.compactMap { $0["id"]?.stringValue }) == ["r1", "r3", "mine"])
        #expect(try await moved.lines(moved.sync(["pending"])).map { $0["id"] } == ["mine"])
    }

    @Test("--server-ids: rows made offline get local ids, replaced by the server's on push")
    func serverAssignedIDs() async throws {
        let server = try TableServer()
        let workspace = try Workspace()
        let online = TableClient(server: server, version: "v2")
        let device = SyncDevice(workspace: workspace, file: "a.sqlite", url: server.url)
        let first = try await device.one(device.local(["--server-ids", "todoitem", "insert", #"{"text":"one"}"#]))
        let localID = try #require(first["id"]?.stringValue)
        #expect(localID.hasPrefix("local-"))
        // The store remembers the table's choice: the flag is not needed again.
        let second = try await device.one(device.local(["todoitem", "insert", #"{"text":"two"}"#]))
        #expect(second["id"]?.stringValue?.hasPrefix("local-") == true)
        // Another table is not concerned.
        let other = try await device.one(device.local(["other", "insert", #"{"text":"x"}"#]))
        #expect(other["id"]?.stringValue?.hasPrefix("local-") == false)
        #expect(try await CLI.run(["sync", "--store", device.path, "purge", "other", "--force"]).status == 0)

        let push = try await device.lines(device.sync(["push"]))
        #expect(push.count == 2)
        #expect(push.allSatisfy { $0["result"] == "ok" })
        #expect(try await device.lines(device.sync(["pending"])).isEmpty)
        // The local id still finds the row, now under the server's id.
        let pushed = try await device.one(device.local(["todoitem", "get", localID]))
        let serverID = try #require(pushed["id"]?.stringValue)
        #expect(!serverID.hasPrefix("local-"))
        #expect(pushed["text"] == "one")
        #expect(try await online.one(online.run(["get", serverID]))["text"] == "one")
        let listed = try await device.lines(device.local(["todoitem", "list"]))
        #expect(listed.count == 2)
        #expect(listed.allSatisfy { $0["id"]?.stringValue?.hasPrefix("local-") == false })
    }

    @Test("a server that is down or answers 401: exit 4, and every operation is still queued", arguments: transports)
    func serverDownKeepsTheQueue(_ transport: String) async throws {
        let workspace = try Workspace()
        let down = try TinyServer(status: "200 OK", body: "{}")
        down.stop()
        let device = SyncDevice(workspace: workspace, file: "a.sqlite", url: down.url, transport: transport)
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"a","text":"A"}"#]))
        try await device.lines(device.local(["todoitem", "insert", #"{"id":"b","text":"B"}"#]))
        let push = try await device.sync(["push"])
        #expect(push.stderr.hasPrefix("error: "))
        let line = try device.one(push, exit: 4)
        #expect(line["id"] == "a")
        #expect(line["status"] == .null)
        #expect(line["result"] == "error")
        let pending = try await device.lines(device.sync(["pending"]))
        #expect(pending.map { $0["id"]?.stringValue } == ["a", "b"])
        #expect(pending.map { $0["state"] } == ["attempted", "pending"])
        // A pull pushes first: that push is aborted, and so is the pull.
        let pull = try await device.sync(["pull", "todoitem"])
        #expect(pull.status == 4, "\(pull.stdout) \(pull.stderr)")
        // A pull of a table with nothing queued meets the server itself: aborted too.
        let other = try await device.sync(["pull", "other"])
        #expect(other.status == 4, "\(other.stdout) \(other.stderr)")

        let unauthorized = try TinyServer(status: "401 Unauthorized", body: #"{"error":"no"}"#)
        defer { unauthorized.stop() }
        let refused = SyncDevice(workspace: workspace, file: "a.sqlite", url: unauthorized.url, transport: transport)
        let push401 = try await refused.sync(["push"])
        #expect(push401.status == 4, "\(push401.stdout) \(push401.stderr)")
        #expect(try await refused.lines(refused.sync(["pending"])).count == 2)
        let pull401 = try await refused.sync(["pull", "other"])
        #expect(pull401.status == 4, "\(pull401.stdout) \(pull401.stderr)")
        #expect(pull401.stdout.isEmpty)
    }

    @Test("the help names the verbs, the options and the exit codes")
    func help() async throws {
        let sync = try await CLI.run(["sync", "--help"])
        #expect(sync.status == 0)
        for word in [
            "push", "pull", "reconcile", "purge", "pending", "errors", "cancel", "settle", "uncertain", "--on-conflict",
            "--query-id", "Exit codes",
        ] {
            #expect(sync.stdout.contains(word), "sync --help: \(word)")
        }
        let local = try await CLI.run(["local", "--help"])
        #expect(local.status == 0)
        for word in ["insert", "update", "delete", "get", "list", "--server-ids", "--store", "Exit codes"] {
            #expect(local.stdout.contains(word), "local --help: \(word)")
        }
    }

    @Test(
        "usage errors exit 2",
        arguments: [
            ["local", "todoitem", "list"],  // no --store
            ["local", "--store", "x.sqlite", "todoitem", "frobnicate"],
            ["local", "--store", "x.sqlite", "todoitem", "insert", "[1]"],
            ["local", "--store", "x.sqlite", "todoitem", "insert", "{not json"],
            ["local", "--store", "x.sqlite", "todoitem", "update", #"{"text":"no id"}"#],
            ["local", "--store", "x.sqlite", "todoitem", "get"],
            ["local", "--store", "x.sqlite", "todoitem", "list", "--top", "3"],
            ["local", "--store", "x.sqlite", "--protocol", "v9", "todoitem", "list"],
            ["sync", "--store", "x.sqlite", "push"],  // no --url
            ["sync", "--store", "x.sqlite", "--url", "ftp://h", "push"],
            ["sync", "--store", "x.sqlite", "--url", "http://127.0.0.1:1", "launch"],
            ["sync", "--store", "x.sqlite", "--url", "http://127.0.0.1:1", "push", "--on-conflict", "maybe"],
            ["sync", "--store", "x.sqlite", "--url", "http://127.0.0.1:1", "pull"],
            ["sync", "--store", "x.sqlite", "--url", "http://127.0.0.1:1", "pull", "t", "--page-size", "0"],
            ["sync", "--store", "x.sqlite", "purge"],
            ["sync", "--store", "x.sqlite", "purge", ""],
            ["sync", "--store", "x.sqlite", "--url", "http://127.0.0.1:1", "reconcile", "t", "--by", "guess"],
            ["sync", "--store", "x.sqlite", "reconcile", "t"],  // no --url
            ["sync", "--store", "x.sqlite", "pending", "extra"],
        ])
    func usageErrors(_ arguments: [String]) async throws {
        let workspace = try Workspace()
        let run = try await workspace.run(arguments)
        #expect(run.status == 2, "\(arguments): \(run.stdout) \(run.stderr)")
        #expect(run.stdout.isEmpty, "\(arguments)")
        // Nothing is queued by a refused command.
        let pending = try await workspace.run(["sync", "--store", "x.sqlite", "pending"])
        #expect(pending.status == 0 && pending.stdout.isEmpty, "\(pending.stderr)")
    }

    @Test("a file that is not a store: exit 1, left as it was")
    func notAStore() async throws {
        let workspace = try Workspace()
        try workspace.write("notes.txt", "not a database, just text\n")
        let run = try await workspace.run(["local", "--store", "notes.txt", "todoitem", "list"])
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.hasPrefix("error: "))
        let text = try String(contentsOf: workspace.url.appendingPathComponent("notes.txt"), encoding: .utf8)
        #expect(text == "not a database, just text\n")
    }
}

/// One device: a store file in a workspace, and the server it syncs with.
struct SyncDevice {
    let workspace: Workspace
    let file: String
    let url: String
    var version = "v2"
    /// `--transport`, or nil for the default.
    var transport: String?

    var path: String { workspace.url.appendingPathComponent(file).path }

    func local(_ arguments: [String]) async throws -> CLIRun {
        try await CLI.run(["local", "--store", path, "--protocol", version] + arguments)
    }

    func sync(_ arguments: [String]) async throws -> CLIRun {
        try await CLI.run(
            ["sync", "--store", path, "--url", url, "--protocol", version] + transportOption(transport) + arguments)
    }

    /// The objects a run printed, one per line; the run must have exited with `exit`.
    @discardableResult
    func lines(_ run: CLIRun, exit: Int32 = 0) throws -> [JSONObject] {
        #expect(run.status == exit, "exit \(run.status): \(run.stdout) \(run.stderr)")
        return try run.stdout.split(separator: "\n").map { line in
            guard case .object(let object) = try JSONValue(parsing: String(line)) else {
                throw TableTestFailure(message: "not a JSON object: \(line)")
            }
            return object
        }
    }

    /// The one object a run printed; the run must have exited with `exit`.
    func one(_ run: CLIRun, exit: Int32 = 0) throws -> JSONObject {
        let objects = try lines(run, exit: exit)
        guard objects.count == 1, let object = objects.first else {
            throw TableTestFailure(message: "expected one line, got (exit \(run.status)): \(run.stdout) \(run.stderr)")
        }
        return object
    }
}

/// A JSON integer's value.
func integer(_ value: JSONValue?) -> Int? {
    value?.numberValue.flatMap { Int($0.text) }
}
