// swift-tools-version: 6.1
// The benchmarks live in their own package so that neither the libraries nor the shipped
// `flatland` tool carry a benchmark harness or an allocation counter.
//
//   swift run -c release flatland-bench bench [--json]      (and bench-sqlite, bench-http,
//                                                            bench-table, bench-sync, bench-load)
//   swift package benchmark                                  (package-benchmark's suites)
import PackageDescription

let package = Package(
    name: "FlatlandBenchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "flatland-bench", targets: ["FlatlandBench"])
    ],
    dependencies: [
        .package(name: "Flatland", path: ".."),
        .package(name: "FlatlandServer", path: "../Server"),
        .package(name: "FlatlandAsyncHTTPClient", path: "../Transports/AsyncHTTPClient"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .systemLibrary(
            name: "CBenchYAJL",
            pkgConfig: "yajl",
            providers: [.apt(["libyajl-dev"]), .brew(["yajl"])]
        ),
        // Counts mallocs by defining malloc, calloc and realloc: only in flatland-bench.
        .target(name: "CAllocationCount"),
        .executableTarget(
            name: "FlatlandBench",
            dependencies: [
                "CBenchYAJL", "CAllocationCount",
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
                .product(name: "FlatlandSQLite", package: "Flatland"),
                .product(name: "FlatlandHTTP", package: "Flatland"),
                .product(name: "FlatlandSync", package: "Flatland"),
                .product(name: "FlatlandServer", package: "FlatlandServer"),
                .product(name: "FlatlandServerTesting", package: "FlatlandServer"),
                .product(name: "FlatlandAsyncHTTPClient", package: "FlatlandAsyncHTTPClient"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "FlatlandBenchTests",
            dependencies: [
                "FlatlandBench", "CAllocationCount",
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandServer", package: "FlatlandServer"),
                .product(name: "FlatlandSync", package: "Flatland"),
            ]
        ),
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
            ],
            path: "Support"
        ),
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
