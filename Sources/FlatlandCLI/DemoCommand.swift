import ArgumentParser
import Flatland
import FlatlandFixtures
import FlatlandJSON
import Foundation

/// `flatland demo`: the README's main job, on data the project generates itself.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Generate seed-shaped responses, ingest them, and show the store, its collections and the speed."
    )

    @Option(help: "Approximate size of the generated first page, in bytes.")
    var bytes: Int = 2_000_000

    @Option(help: "Rounds of the short speed comparison (0 skips it).")
    var rounds: Int = 3

    func run() throws {
        var generator = SeedGenerator(seed: 2026)
        let store = Store(registry: seedFixtureRegistry())

        section("1. A session response with the first page of users")
        let first = generator.document(approximateBytes: bytes)
        let start = monotonicSeconds()
        let page1 = try store.ingest(first, endpoint: "/users?offset=0&count=1000&fields=firstname,age&gender=any")
        let seconds = monotonicSeconds() - start
        let count = page1.endpointCollection?.knownItems.count ?? 0
        print("  \(first.count) bytes in \(formatted(seconds * 1000, 1)) ms: \(page1.changes.inserted.count) records")
        print("  store: " + counts(store))

        section("2. One user, flat: related entities are ids")
        if let id = page1.endpointCollection?.knownItems.first, let user = store.entity(EntityID<SeedUser>(id)) {
            print("  \(user.id)  \(user.firstname) \(user.lastname), \(user.age), \(user.email)")
            print("  devices: \(user.devices.map(\.rawValue))")
            print("  friends: \(user.friends.map(\.rawValue))")
        }

        section("3. The collections")
        print(
            "  task \(page1.taskCollection.displayIdentifier): \(page1.taskCollection.items.count) top-level entities")
        print(
            "  endpoint \(page1.endpointCollection?.displayIdentifier ?? "-"): \(count) of \(page1.endpointCollection?.total ?? 0)"
        )
        let pageSize = 3
        let later = generator.userSlice(offset: count + pageSize, count: pageSize, total: count + 2 * pageSize)
        let earlier = generator.userSlice(offset: count, count: pageSize, total: count + 2 * pageSize)
        let page3 = try store.ingest(later, endpoint: "/users?gender=any&offset=\(count + pageSize)&count=\(pageSize)")
        print(
            "  the third page arrives first: endpoint has \(page3.endpointCollection!.knownItems.count) known of "
                + "\(page3.endpointCollection!.items.count) positions")
        let page2 = try store.ingest(earlier, endpoint: "/users?count=\(pageSize)&offset=\(count)&gender=any")
        print(
            "  then the second: \(page2.endpointCollection!.knownItems.count) known, total \(page2.endpointCollection!.total ?? 0)"
        )
        print("  collections in the store: \(store.collections.count) (one per response, one for the endpoint)")

        section("4. A partial response updates only what it carries")
        if let id = page1.endpointCollection?.knownItems.first {
            let before = store.entity(EntityID<SeedUser>(id))!
            let patch = Array(#"{"uuid":"\#(id)","age":\#(before.age + 1)}"#.utf8)
            let result = try store.ingest(patch)
            let after = store.entity(EntityID<SeedUser>(id))!
            print("  changed: \(result.changes.updated.map { "\($0.id) \($0.fields)" })")
            print("  age \(before.age) -> \(after.age); firstname still \(after.firstname)")
        }
        let stranger = EntityID<SeedUser>.generate()
        try store.ingest(Array(#"[{"uuid":"\#(stranger)","firstname":"Zoë"}]"#.utf8))
        if let record = store.record(stranger) {
            print(
                "  a user known only by name holds \(record.presentFields); a profile screen asks for "
                    + "?fields=\(record.missingFields(for: ["firstname", "lastname", "email", "age"]).joined(separator: ","))"
            )
        }

        section("5. A broken response is rejected whole, with its position")
        var broken = generator.userSlice(count: 5)
        broken[broken.count - 2] = UInt8(ascii: "}")
        let snapshotCount = store.count
        do {
            try store.ingest(broken)
        } catch {
            print("  error: \(error)")
            print("  records before \(snapshotCount), after \(store.count)")
        }

        if rounds > 0 {
            section("6. Speed on the first response (median of \(rounds) interleaved rounds)")
            let workload = Workload(
                name: "seed", bytes: first,
                ingest: Workload.Ingest(
                    registry: seedFixtureRegistry(), options: IngestOptions(),
                    jsonDecoder: { try SeedCodable.decode($0).count },
                    jsonSerialization: { try SeedCodable.serialization($0).count }))
            let r = try Bench.measure(workload, rounds: rounds)
            func mbps(_ s: Double?) -> String {
                s.map { formatted(Double(first.count) / 1e6 / $0, 1) + " MB/s" } ?? "-"
            }
            print("  raw yajl (no-op callbacks)     \(mbps(r.yajlRaw))")
            print("  FlatlandJSON parse             \(mbps(r.parse))")
            print("  Flatland typed ingest          \(mbps(r.ingest))")
            print("  JSONDecoder + dictionaries     \(mbps(r.jsonDecoder))")
            print("  JSONSerialization + mapping    \(mbps(r.jsonSerialization))")
            if let i = r.ingest, let d = r.jsonDecoder {
                print(
                    "  ingest is \(formatted(d / i, 2))x JSONDecoder "
                        + "(on a busy machine the MB/s move; the interleaved ratio holds better)")
            }
            print("  (full comparison: swift run -c release flatland bench)")
        }
    }

    private func section(_ title: String) { print("\n" + title) }

    private func counts(_ store: Store) -> String {
        store.countsByPrefix.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }
}
