import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSync
import Foundation
import Testing

/// Pulls against every combination of a legal server's behaviours, chosen per seed: page caps
/// below `$top`, a coarse clock, ties in a random order, each form and place of next link, rows
/// updated while the pull pages, slow bodies, failed requests and resumes; v2 and v3.
///
/// The invariant after each seed: the device holds exactly the server's rows, each at its
/// latest version, and every row the server did not change during the first pull arrived in
/// that pull.
@Suite("Pulls against a legal server of every behaviour")
struct LegalServerPullTests {
    /// The behaviours of seed `seed`.
    static func behaviour(seed: UInt64) -> (LegalServer.Behaviour, rows: Int, pageSize: Int) {
        var rng = SplitMix(seed: seed &* 7919 &+ 17)
        func pick<T>(_ options: [T]) -> T { options[Int(rng.next() % UInt64(options.count))] }
        let version: TableProtocol = pick([.v2, .v3])
        var b = LegalServer.Behaviour(protocol: version, seed: seed)
        b.pageSize = pick([20, 50, 100])
        b.pageCap = pick([nil, nil, 7, 25, 60])
        b.rowsPerTick = pick([1, 3, 40, 1000])
        b.shufflesTies = pick([true, false])
        b.link = pick(LegalServer.Behaviour.Link.allCases)
        b.linkInHeader = pick([true, false])
        b.updatesPerRequest = pick([0, 0, 1, 5])
        b.updateBudget = pick([10, 40])
        if pick([true, false, false, false]) {
            b.chunkSize = pick([64, 512])
            b.chunkDelay = .microseconds(200)
        }
        // Ignoring $skip is legal only where nothing pages with it: no links.
        if b.link == .none, pick([true, false]) { b.ignoresSkip = true }
        if pick([true, false, false]) { b.failsListings = [Int(rng.next() % 6) + 2] }
        return (b, pick([0, 1, 45, 230]), pick([10, 50, 1000]))
    }

    /// CI's seeds: 40; `FLATLAND_LEGAL_SEEDS=N` runs N by hand.
    static let seeds = 0..<(ProcessInfo.processInfo.environment["FLATLAND_LEGAL_SEEDS"].flatMap { Int($0) } ?? 40)

    @Test(arguments: seeds)
    func everyRowOnceWhateverTheServerDoes(seed: Int) async throws {
        let (behaviour, count, pageSize) = Self.behaviour(seed: UInt64(seed))
        let server = LegalServer(behaviour)
        server.insert(count: count)
        let before = server.rows()
        try await withLegalDevice(server) { device in
            let table = device.table
            try await Self.pullResuming(table, pageSize: pageSize)
            // Every row the server left alone during the pull arrived in it.
            let after = server.rows()
            let local = device.local()
            let untouched = before.filter { after[$0.key] == $0.value }
            let lost = untouched.keys.filter { local[$0]?.text("version") != "v\(after[$0]!.version)" }
            #expect(lost.isEmpty, "seed \(seed) \(behaviour): lost \(lost.sorted().prefix(5))")
            // Once the server is quiet, one more pull leaves the device equal to it.
            server.behaviour.updatesPerRequest = 0
            try await Self.pullResuming(table, pageSize: pageSize)
            #expect(device.matchesServer(), "seed \(seed) \(behaviour): missing \(device.missing().prefix(5))")
        }
    }

    /// Pulls, and pulls again after a failed request (the server's 503): each pull resumes from
    /// the key the one before committed.
    static func pullResuming(_ table: OfflineTable, pageSize: Int) async throws {
        var failures = 0
        while true {
            do {
                _ = try await withTimeLimit(hangGuardSeconds) {
                    try await table.pull(queryID: "all", pageSize: pageSize)
                }
                return
            } catch let error as SyncError where error.code == .http && failures < 3 {
                failures += 1
            }
        }
    }

    /// A full read (no query id) reads every row once too, whatever the server does.
    @Test(arguments: 0..<12)
    func aFullReadGetsEveryRow(seed: Int) async throws {
        var (behaviour, count, size) = Self.behaviour(seed: UInt64(seed) + 1000)
        let pageSize = size
        behaviour.updatesPerRequest = 0
        behaviour.failsListings = []
        let server = LegalServer(behaviour)
        server.insert(count: count)
        try await withLegalDevice(server) { device in
            let table = device.table
            _ = try await withTimeLimit(hangGuardSeconds) { try await table.pull(pageSize: pageSize) }
            #expect(device.matchesServer(), "seed \(seed) \(behaviour): missing \(device.missing().prefix(5))")
        }
    }
}
