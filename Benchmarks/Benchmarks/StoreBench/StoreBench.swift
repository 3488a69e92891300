import Benchmark
import BenchmarkSupport
import Flatland
import FlatlandFixtures

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 1,
        maxDuration: .seconds(2),
        maxIterations: 1000,
        thresholds: mallocThresholds()
    )

    var generator = SeedGenerator(seed: 7)
    let document = generator.document(approximateBytes: 2_000_000)
    let store = Store(registry: seedFixtureRegistry())
    _ = try? store.ingest(document)
    let ids = store.ids(prefix: "u").map { EntityID<SeedUser>($0) }
    let emails = store.all(SeedUser.self).prefix(100).map(\.email)

    Benchmark("lookup_1000_users_by_id", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(store.entity(ids[i % ids.count]))
        }
    }

    Benchmark("lookup_users_by_indexed_email", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(try! store.entities(where: \SeedUser.email, equals: emails[i % emails.count]))
        }
    }

    Benchmark("all_users_of_a_type") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(store.all(SeedUser.self))
        }
    }

    Benchmark("upsert_one_user") { benchmark in
        var user = SeedUser(id: ids[0])
        user.firstname = "Ada"
        for i in benchmark.scaledIterations {
            user.age = i
            blackHole(try store.upsert(user))
        }
    }

    Benchmark("snapshot_and_read") { benchmark in
        for i in benchmark.scaledIterations {
            let snapshot = store.snapshot()
            blackHole(snapshot.entity(ids[i % ids.count]))
        }
    }
}
