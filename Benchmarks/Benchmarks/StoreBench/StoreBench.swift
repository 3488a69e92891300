import Benchmark
import Flatland
import FlatlandFixtures

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 1,
        maxDuration: .seconds(2),
        maxIterations: 1000
    )

    var generator = SeedGenerator(seed: 7)
    let document = generator.document(approximateBytes: 2_000_000)
    let store = Store(registry: seedFixtureRegistry())
    _ = try? store.ingest(document)
    let ids = store.ids(prefix: "u").map { EntityID<SeedUser>($0) }
    let emails = store.all(SeedUser.self).prefix(100).map(\.email)

    Benchmark("lookup 1000 users by id", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(store.entity(ids[i % ids.count]))
        }
    }

    Benchmark("lookup users by indexed email", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(store.entities(where: \SeedUser.email, equals: emails[i % emails.count]))
        }
    }

    Benchmark("all users of a type") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(store.all(SeedUser.self))
        }
    }

    Benchmark("upsert one user") { benchmark in
        var user = SeedUser(id: ids[0])
        user.firstname = "Ada"
        for i in benchmark.scaledIterations {
            user.age = i
            blackHole(try store.upsert(user))
        }
    }

    Benchmark("snapshot and read") { benchmark in
        for i in benchmark.scaledIterations {
            let snapshot = store.snapshot()
            blackHole(snapshot.entity(ids[i % ids.count]))
        }
    }
}
