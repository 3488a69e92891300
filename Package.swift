// swift-tools-version: 6.1
// The library products, and nothing else: an app or SDK that depends on Flatland resolves GRDB,
// swift-log and swift-metrics (the two API packages of the logging and metrics it emits, no-op
// until the app picks a backend) and no other package. The server and the command-line tool live in `Server/`, the benchmarks
// in `Benchmarks/`, each a package of its own on this one by path (see "The package map" in the
// README).
import PackageDescription

let package = Package(
    name: "Flatland",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "FlatlandJSON", targets: ["FlatlandJSON"]),
        .library(name: "Flatland", targets: ["Flatland"]),
        .library(name: "FlatlandFixtures", targets: ["FlatlandFixtures"]),
        .library(name: "FlatlandSQLite", targets: ["FlatlandSQLite"]),
        .library(name: "FlatlandHTTP", targets: ["FlatlandHTTP"]),
        .library(name: "FlatlandSync", targets: ["FlatlandSync"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CYAJL",
            pkgConfig: "yajl",
            providers: [.apt(["libyajl-dev"]), .brew(["yajl"])]
        ),
        .target(name: "CFlatlandSIMD"),
        .target(name: "FlatlandJSON", dependencies: ["CYAJL", "CFlatlandSIMD"]),
        .target(name: "FlatlandFixtures", dependencies: ["Flatland", "FlatlandJSON"]),
        .target(name: "Flatland", dependencies: ["FlatlandJSON"]),
        .target(
            name: "FlatlandSQLite",
            dependencies: [
                "Flatland", "FlatlandJSON", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "FlatlandHTTP",
            dependencies: [
                "Flatland", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "FlatlandSync",
            dependencies: [
                "Flatland", "FlatlandHTTP", "FlatlandSQLite", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // Test-only: the process the SQLite crash tests kill mid-commit. No product names it.
        .executableTarget(
            name: "FlatlandCrashHelper",
            dependencies: [
                "Flatland", "FlatlandJSON", "FlatlandSQLite", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/FlatlandCrashHelper"
        ),
        // FlatlandHTTP and FlatlandSync over a transport of the test's own: logs, metrics, protocols, URLs.
        .testTarget(
            name: "FlatlandClientTests",
            dependencies: [
                "Flatland", "FlatlandJSON", "FlatlandHTTP", "FlatlandSync", "FlatlandSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .testTarget(name: "FlatlandJSONTests", dependencies: ["FlatlandJSON", "CFlatlandSIMD"]),
        .testTarget(name: "FlatlandTests", dependencies: ["Flatland", "FlatlandFixtures", "FlatlandSQLite"]),
        .testTarget(
            name: "FlatlandSQLiteTests",
            dependencies: [
                "FlatlandSQLite", "Flatland", "FlatlandJSON", "FlatlandFixtures", "FlatlandCrashHelper",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // Store files written by earlier formats, read through #filePath (see its README).
            exclude: ["Fixtures"]
        ),
    ]
)
