import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandSync
import Foundation

/// A device on a ``LegalServer``: a persistent session in its own directory, whose transport
/// is the server, and its sync context; reopened on the same directory after a "kill".
struct LegalDevice {
    let server: LegalServer
    let session: Session
    let sync: SyncContext
    let directory: String
    let log: RequestLog

    init(_ server: LegalServer, directory: String? = nil, timeout: TimeInterval = 60) throws {
        let directory =
            directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("flatland-legal-\(UUID())").path
        self.server = server
        self.directory = directory
        let version = server.behaviour.protocol
        var configuration = Backend.Configuration(makeTransport: { server })
        configuration.addTableHeaders(protocol: version)
        let log = RequestLog()
        self.log = log
        configuration.filters.append(log.filter)
        configuration.timeout = timeout
        session = try Session(
            user: "device", environment: try LegalServer.environment, registry: try EntityRegistry([TodoItem.self]),
            storage: .persistent(SQLitePersistence.sessionStorage(in: directory)), configuration: configuration)
        sync = try SyncContext(
            session: session, options: TableOptions(protocol: version, systemProperties: version == .v1 ? .all : nil))
    }

    /// The table every test pulls.
    var table: OfflineTable { sync.table("things") }

    /// The local rows, by id: their text, version and `updatedAt` as pulled.
    func local() -> [String: JSONObject] {
        Dictionary(uniqueKeysWithValues: table.rows().compactMap { row in row.text("id").map { ($0, row) } })
    }

    /// Whether the device holds exactly the server's live rows, each at its latest version.
    func matchesServer() -> Bool {
        let rows = local()
        let server = server.rows()
        guard rows.count == server.count else { return false }
        return server.allSatisfy { id, row in rows[id]?.text("version") == "v\(row.version)" }
    }

    /// The rows missing locally, or at an older version, by id.
    func missing() -> [String] {
        let rows = local()
        return server.rows().filter { id, row in rows[id]?.text("version") != "v\(row.version)" }.keys.sorted()
    }

    func close() async { await session.close() }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Runs `body` with a device on `server`, closed and removed afterwards.
func withLegalDevice<R>(_ server: LegalServer, _ body: (LegalDevice) async throws -> R) async throws -> R {
    let device = try LegalDevice(server)
    defer { device.remove() }
    do {
        let result = try await body(device)
        await device.close()
        return result
    } catch {
        await device.close()
        throw error
    }
}
