import Flatland
import FlatlandJSON
import FlatlandServer
import FlatlandSync
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The second half of `flatland demo`: two devices of one user on the embedded table server,
/// both offline, both editing (one row on both: one conflict), both syncing, the conflict
/// settled by a handler, and both ending equal to the server. Every line says what happened.
struct TwoDeviceDemo {
    /// Where the table server keeps its rows: a SQLite file, `postgres://…` (once the server
    /// speaks PostgreSQL), or nil for memory.
    var tablesDB: String?
    /// The HTTP stack both devices use.
    var transport: TransportChoice = .platformDefault

    func run() async throws {
        let server = SampleServer(
            configuration: .init(
                population: .init(users: 1, sessions: 1),
                tables: TableServing(storage: tablesDB.map(TableServing.Storage.init)))
        )
        let port = try await server.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-demo-\(UUID())")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try await devices(port: port, directory: directory)
        } catch {
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func devices(port: Int, directory: URL) async throws {
        let url = URL(string: "http://127.0.0.1:\(port)")!
        print("  The table server listens at \(url)/tables/todoitem; it keeps its rows \(place).")
        let phone = try await OfflineStore.open(
            path: directory.appendingPathComponent("phone.sqlite").path, baseURL: url, protocol: .v2,
            transport: transport)
        let tablet = try await OfflineStore.open(
            path: directory.appendingPathComponent("tablet.sqlite").path, baseURL: url, protocol: .v2,
            transport: transport)
        do {
            try await edit(phone: phone, tablet: tablet, url: url)
        } catch {
            await phone.session.close()
            await tablet.session.close()
            throw error
        }
        await phone.session.close()
        await tablet.session.close()
    }

    private func edit(phone: OfflineStore, tablet: OfflineStore, url: URL) async throws {
        let onPhone = phone.sync.table("todoitem")
        let onTablet = tablet.sync.table("todoitem")

        print("  Ada's phone is offline. She adds three todo items; each waits in the phone's queue.")
        try onPhone.insert(["id": "milk", "text": "Buy milk"])
        try onPhone.insert(["id": "call", "text": "Call Grace"])
        try onPhone.insert(["id": "train", "text": "Book the train"])
        print("  The phone's queue holds \(try phone.sync.operations().count) operations; the server has none of them.")
        let first = await phone.sync.push()
        print("  The phone comes online and pushes: \(describe(first)).")
        let pulled = try await onTablet.pull(queryID: "all")
        print("  Ada's tablet pulls the table: \(pulled.rows) rows arrive, the same three.")

        print("  Both devices go offline and both edit.")
        try onPhone.update(["id": "milk", "text": "Buy oat milk"])
        print("  On the phone: 'milk' becomes \"Buy oat milk\".")
        try onPhone.delete("train")
        print("  On the phone: 'train' is deleted.")
        try onTablet.update(["id": "milk", "text": "Buy milk and bread"])
        print("  On the tablet: 'milk' becomes \"Buy milk and bread\" (the same row: this will conflict).")
        try onTablet.update(["id": "call", "complete": true])
        print("  On the tablet: 'call' is marked complete.")
        try onTablet.insert(["id": "plants", "text": "Water the plants"])
        print("  On the tablet: 'plants' is added.")

        let tabletPush = await tablet.sync.push()
        print("  The tablet comes online first and pushes: \(describe(tabletPush)).")
        _ = try await onTablet.pull(queryID: "all")

        let settled = DemoLines()
        let phonePush = await phone.sync.push { conflict in
            let mine = conflict.localItem?["text"]?.stringValue ?? ""
            let theirs = conflict.serverItem?["text"]?.stringValue ?? ""
            // Keeps the phone's words and adds what the tablet added after "Buy milk".
            let merged = mine + theirs.replacingOccurrences(of: "Buy milk", with: "")
            settled.append(
                "  Conflict on '\(conflict.operation.itemID)': the phone has \"\(mine)\", the server has "
                    + "\"\(theirs)\" (status \(conflict.status)); the handler merges them into \"\(merged)\".")
            return .replace(["text": .string(merged)])
        }
        print("  The phone comes online and pushes: \(describe(phonePush)).")
        for line in settled.lines { print(line) }
        let again = await phone.sync.push()
        print("  The phone pushes the merged row: \(describe(again)).")
        let phonePull = try await onPhone.pull(queryID: "all")
        print("  The phone pulls: \(phonePull.rows) rows come from the server, the tablet's edits among them.")
        let tabletPull = try await onTablet.pull(queryID: "all")
        print(
            "  The tablet pulls: \(tabletPull.rows) rows come from the server, the phone's delete and the merge among them."
        )

        let server = try await TwoDeviceDemo.serverRows(url)
        let phoneRows = TwoDeviceDemo.rows(onPhone.rows())
        let tabletRows = TwoDeviceDemo.rows(onTablet.rows())
        for (id, row) in server.sorted(by: { $0.key < $1.key }) {
            print("    \(id): \(row)")
        }
        let queued = try phone.sync.operations().count + tablet.sync.operations().count
        guard phoneRows == server, tabletRows == server, queued == 0 else {
            throw CLIFailure.invalid(
                "the devices and the server differ: phone \(phoneRows), tablet \(tabletRows), server \(server), "
                    + "\(queued) operations left")
        }
        print(
            "  The phone, the tablet and the server are equal: \(server.count) rows, the same text, completion "
                + "and version on all three; both queues are empty.")
    }

    private var place: String {
        guard let tablesDB else { return "in memory" }
        return "in \(tablesDB)"
    }

    /// A push in words: how many operations went out and how they ended.
    private func describe(_ result: PushResult) -> String {
        var counts: [String: Int] = [:]
        for outcome in result.outcomes { counts[outcome.result.rawValue, default: 0] += 1 }
        let parts = ["ok", "resolved", "conflict", "error"].compactMap { key in
            counts[key].map { "\($0) \(key == "ok" ? "accepted" : key)" }
        }
        let sent = "\(result.outcomes.count) operation\(result.outcomes.count == 1 ? "" : "s") sent"
        return ([sent] + parts).joined(separator: ", ") + (result.aborted ? ", then it stopped" : "")
    }

    /// Rows as the demo compares them: id → "text, complete, version".
    static func rows(_ objects: [JSONObject]) -> [String: String] {
        var rows: [String: String] = [:]
        for object in objects {
            guard let id = object["id"]?.stringValue else { continue }
            let complete: Bool
            if case .bool(let value)? = object["complete"] { complete = value } else { complete = false }
            rows[id] =
                "\"\(object["text"]?.stringValue ?? "")\", complete \(complete), version \(object["version"]?.stringValue ?? "-")"
        }
        return rows
    }

    /// The server's rows, read with a plain request.
    static func serverRows(_ url: URL) async throws -> [String: String] {
        var request = URLRequest(url: url.appendingPathComponent("tables/todoitem"))
        request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let (data, _) = try await session.data(for: request)
        guard case .array(let items) = try JSONValue(parsing: Array(data)) else {
            throw CLIFailure.invalid("the table server's listing is not an array")
        }
        return rows(
            items.compactMap {
                if case .object(let object) = $0 { return object }
                return nil
            })
    }
}

/// Lines a handler collects while a push runs, printed after it.
final class DemoLines: Sendable {
    private let collected = Mutex<[String]>([])
    var lines: [String] { collected.withLock { $0 } }
    func append(_ line: String) { collected.withLock { $0.append(line) } }
}
