// swift-tools-version: 6.1
// The table server, its testing product and the `flatland` command-line tool: a package of its
// own on the library package (`..`) by path, so that Hummingbird, SwiftNIO and postgres-nio never
// reach an app that links only the libraries. Its tests include the integration suites of the
// HTTP and sync libraries, which need a server to talk to.
//
//   swift build -c release --product flatland     (from this folder)
import PackageDescription

let package = Package(
    name: "FlatlandServer",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "FlatlandServer", targets: ["FlatlandServer"]),
        .library(name: "FlatlandServerTesting", targets: ["FlatlandServerTesting"]),
        .executable(name: "flatland", targets: ["FlatlandCLI"]),
    ],
    dependencies: [
        .package(name: "Flatland", path: ".."),
        .package(name: "FlatlandAsyncHTTPClient", path: "../Transports/AsyncHTTPClient"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .target(
            name: "FlatlandServer",
            dependencies: [
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .target(
            name: "FlatlandServerTesting",
            dependencies: [
                "FlatlandServer",
                .product(name: "FlatlandJSON", package: "Flatland"),
            ]
        ),
        .executableTarget(
            name: "FlatlandCLI",
            dependencies: [
                "FlatlandServer",
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
                .product(name: "FlatlandSQLite", package: "Flatland"),
                .product(name: "FlatlandHTTP", package: "Flatland"),
                .product(name: "FlatlandSync", package: "Flatland"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "FlatlandAsyncHTTPClient", package: "FlatlandAsyncHTTPClient"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FlatlandServerTests",
            dependencies: [
                "FlatlandServer", "FlatlandServerTesting",
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "FlatlandHTTPTests",
            dependencies: [
                "FlatlandServer", "FlatlandServerTesting",
                .product(name: "FlatlandHTTP", package: "Flatland"),
                .product(name: "FlatlandAsyncHTTPClient", package: "FlatlandAsyncHTTPClient"),
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandSQLite", package: "Flatland"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "FlatlandSyncTests",
            dependencies: [
                "FlatlandServer", "FlatlandServerTesting",
                .product(name: "FlatlandSync", package: "Flatland"),
                .product(name: "FlatlandHTTP", package: "Flatland"),
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandSQLite", package: "Flatland"),
                .product(name: "FlatlandFixtures", package: "Flatland"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "FlatlandCLITests",
            dependencies: [
                "FlatlandCLI",
                .product(name: "FlatlandJSON", package: "Flatland"),
                .product(name: "FlatlandSync", package: "Flatland"),
            ]
        ),
    ]
)
