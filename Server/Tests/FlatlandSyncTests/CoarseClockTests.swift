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
