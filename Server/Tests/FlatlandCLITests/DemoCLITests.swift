import Foundation
import Testing

/// `flatland demo`: the two-device part says what happened and ends with the devices equal to
/// the server.
@Suite("flatland demo: two devices, one conflict, both equal to the server")
struct DemoCLITests {
    @Test(arguments: transports)
    func theTwoDevicePartSettlesOneConflictAndEndsEqualOnAStoredTable(_ transport: String) async throws {
        let workspace = try Workspace()
        let tables = workspace.url.appendingPathComponent("tables.sqlite").path
        let run = try await CLI.run(
            ["demo", "--users", "4", "--rounds", "0", "--tables-db", tables] + transportOption(transport))
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        // The seed flow is still there, before the devices.
        #expect(lines.contains { $0.hasPrefix("9. Logout") })
        #expect(lines.contains { $0.contains("it keeps its rows in \(tables)") })
        let conflicts = lines.filter { $0.contains("Conflict on 'milk'") }
        #expect(conflicts.count == 1)
        #expect(
            conflicts.first?.contains(
                #"the phone has "Buy oat milk", the server has "Buy milk and bread" (status 412); the handler merges them into "Buy oat milk and bread""#
            ) == true)
        #expect(lines.contains { $0.contains("1 resolved") })
        let equal = try #require(lines.last { $0.contains("are equal") })
        #expect(equal.contains("The phone, the tablet and the server are equal: 3 rows"))
        #expect(equal.contains("both queues are empty"))
        // The rows lived in the file given.
        #expect(FileManager.default.fileExists(atPath: tables))
    }
}
