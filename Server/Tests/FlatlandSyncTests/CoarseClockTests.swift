import Flatland
import FlatlandJSON
import FlatlandSync
import Foundation
import Testing

/// A server whose clock is coarse gives many rows one `updatedAt`, and a row written after a
/// pull ended may land in the tick of the last row pulled, with an id before it: behind the
/// key `(updatedAt, id)` the pull ended on. The next pull reads that tick again.
@Suite("Pulls by key against a coarse clock")
struct CoarseClockTests {
    @Test("a row written in the tick of the last row pulled, with an id before it, reaches the next pull")
    func aRowWrittenLaterInTheLastTickIsPulled() async throws {
        // Every write in one tick, until the clock is moved on.
        let server = LegalServer(.init(protocol: .v2, rowsPerTick: 100_000))
        server.insert(count: 20)
        try await withLegalDevice(server) { device in
            let first = try await device.table.pull(queryID: "all")
            #expect(first.rows == 20)
            // After the pull, in the same tick: r0003 (before the key's id, r0019) and a new row.
            server.update("r0003", text: "later, same tick")
            server.insert(count: 1)
            let second = try await device.table.pull(queryID: "all")
            #expect(device.matchesServer(), "missing \(device.missing())")
            // Only what changed counts: the tick's other rows, read again, are the same.
            #expect(second.rows == 2, "\(second)")
            // Nothing changed: nothing counts.
            let third = try await device.table.pull(queryID: "all")
            #expect(third.rows == 0, "\(third)")
            #expect(device.matchesServer())
            // A delete in the same tick, and a later tick.
            server.delete("r0001")
            server.advanceClock()
            server.update("r0010", text: "next tick")
            let fourth = try await device.table.pull(queryID: "all")
            #expect(fourth.rows == 2, "\(fourth)")
            #expect(fourth.deleted == 1)
            #expect(device.matchesServer(), "missing \(device.missing())")
        }
    }

    /// A pull cut in the middle of a tick keeps its whole key, `(T, r0009)`. While it is cut,
    /// another client updates `r0003`, and the coarse clock gives the update the same `T`: the
    /// row now sits behind the key, in the key's tick. Then the clock moves on and a later row
    /// is written, so the resumed pull ends in a later tick and no later pull reads `T` again.
    /// The resumed pull reads the key's tick from its start (the simulation's seed 530 lost
    /// such a row for good).
    @Test(
        "a row of the key's tick updated behind the key while the pull was cut reaches the resumed pull",
        arguments: [TableProtocol.v2, .v3])
    func aRowUpdatedBehindACutPullsKeyInItsTickReachesTheResume(version: TableProtocol) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version, rowsPerTick: 100_000)
        behaviour.failsListings = [3]
        let server = LegalServer(behaviour)
        server.insert(count: 20)
        try await withLegalDevice(server) { device in
            await #expect(throws: SyncError.self) { try await device.table.pull(queryID: "all", pageSize: 5) }
            // Two pages committed, r0000–r0009: the key is (T, r0009).
            #expect(device.local().count == 10)
            server.update("r0003", text: "updated behind the key, in its tick")
            server.advanceClock()
            server.update("r0015", text: "a later tick")
            // Read again from the tick's start, the rows the device holds as they are count as
            // none: r0003, then r0010–r0019.
            try await pullGetsEveryRow(device, pageSize: 5, counting: 11)
        }
    }

    /// While a pull pages: a page ends in the server's current tick (three rows per tick); then
    /// another client updates a row of that tick with an id before the page's last (the same
    /// `updatedAt`, the clock has not moved), the clock moves on and a row is written. The pull
    /// goes on into the later tick, so no later pull reads the earlier one again. After a full
    /// page (5 rows a page) the next request reads the page's last tick again from its first
    /// row; after a short one (6 a page), the answer that shows the later tick makes the pull
    /// read the tick again.
    @Test(
        "a row written into a page's last tick, behind its last row, while the pull pages reaches the same pull",
        arguments: [TableProtocol.v2, .v3], [5, 6])
    func aRowWrittenBehindAPagesLastRowInItsTickIsPulled(version: TableProtocol, pageSize: Int) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version, rowsPerTick: 3)
        // r0000–r0002 in the first tick, r0003 and r0004 in the second: the page's last tick.
        behaviour.writesBeforeListings = [2: [.update("r0003"), .advanceClock, .insert]]
        let server = LegalServer(behaviour)
        server.insert(count: 5)
        try await withLegalDevice(server) { device in
            // r0003 twice (inserted, then updated), r0005; r0004, read again as it is, counts as none.
            try await pullGetsEveryRow(device, pageSize: pageSize, counting: 7)
        }
    }

    /// While a pull pages through a tick of more rows than a page (a coarse clock): another
    /// client updates a row of the tick behind the pull's key, then the clock moves on and a
    /// row is written. When an answer shows the later tick, the tick is read once more from its
    /// first row, now that it is complete.
    @Test(
        "a row written behind the key into a tick of more than a page, while the pull pages, reaches the same pull",
        arguments: [TableProtocol.v2, .v3])
    func aRowWrittenBehindTheKeyInALargeTickIsPulled(version: TableProtocol) async throws {
        var behaviour = LegalServer.Behaviour(protocol: version, rowsPerTick: 100_000)
        behaviour.writesBeforeListings = [2: [.update("r0001")], 3: [.advanceClock, .insert]]
        let server = LegalServer(behaviour)
        server.insert(count: 12)
        try await withLegalDevice(server) { device in
            // 13 rows and r0001's update; the tick's rows read again as they are count as none.
            try await pullGetsEveryRow(device, pageSize: 5, counting: 14)
        }
    }

    /// Pulls; the device then holds every server row at its version, the pull counted `rows`,
    /// and a pull after it brings none.
    private func pullGetsEveryRow(_ device: LegalDevice, pageSize: Int, counting rows: Int) async throws {
        let pulled = try await device.table.pull(queryID: "all", pageSize: pageSize)
        #expect(device.matchesServer(), "missing \(device.missing())")
        #expect(pulled.rows == rows, "\(pulled)")
        let next = try await device.table.pull(queryID: "all", pageSize: pageSize)
        #expect(next.rows == 0, "\(next)")
        #expect(device.matchesServer(), "missing \(device.missing())")
    }

    @Test("tied rows in a random order per request and a coarse clock, written between pulls: every row arrives")
    func shuffledTiesOnACoarseClockBetweenPulls() async throws {
        let server = LegalServer(.init(protocol: .v2, pageCap: 7, rowsPerTick: 25, shufflesTies: true))
        server.insert(count: 60)
        try await withLegalDevice(server) { device in
            for round in 0..<6 {
                _ = try await withTimeLimit(hangGuardSeconds) {
                    try await device.table.pull(queryID: "all", pageSize: 10)
                }
                #expect(device.matchesServer(), "round \(round): missing \(device.missing())")
                for i in stride(from: round, to: 60, by: 9) { server.update(String(format: "r%04d", i)) }
                server.insert(count: 3)
            }
        }
    }
}
