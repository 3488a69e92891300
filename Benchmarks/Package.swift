// swift-tools-version: 6.1
// The benchmarks live in their own package so that Flatland never depends on the harness.
// Run from this directory: swift package benchmark
import PackageDescription

let package = Package(
    name: "FlatlandBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Flatland", path: ".."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
            ],
            path: "Support"
        )
    ]
        + ["ParseBench", "IngestBench", "StoreBench", "PersistBench"].map { name in
        .executableTarget(
            name: name,
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
                .product(name: "FlatlandSQLite", package: "Flatland"),
            ],
            path: "Benchmarks/\(name)",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        )
    }
)
