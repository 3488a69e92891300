// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Flatland",
    products: [
        .library(name: "FlatlandJSON", targets: ["FlatlandJSON"]),
        .library(name: "Flatland", targets: ["Flatland"]),
        .library(name: "FlatlandFixtures", targets: ["FlatlandFixtures"]),
        .library(name: "FlatlandSQLite", targets: ["FlatlandSQLite"]),
        .library(name: "FlatlandHTTP", targets: ["FlatlandHTTP"]),
        .library(name: "FlatlandSync", targets: ["FlatlandSync"]),
        .library(name: "FlatlandServer", targets: ["FlatlandServer"]),
        .executable(name: "flatland", targets: ["FlatlandCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CYAJL",
            pkgConfig: "yajl",
            providers: [.apt(["libyajl-dev"]), .brew(["yajl"])]
        ),
        .target(name: "CFlatlandSIMD"),
        .target(name: "CAllocationCount"),
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
        .target(name: "FlatlandHTTP", dependencies: ["Flatland"]),
        .target(
            name: "FlatlandSync",
            dependencies: ["Flatland", "FlatlandHTTP", "FlatlandSQLite", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .target(
            name: "FlatlandServer",
            dependencies: [
                "Flatland",
                "FlatlandJSON",
                "FlatlandFixtures",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            name: "FlatlandCLI",
            dependencies: [
                "Flatland",
                "FlatlandJSON",
                "FlatlandFixtures",
                "FlatlandSQLite",
                "FlatlandHTTP",
                "FlatlandSync",
                "FlatlandServer",
                "CYAJL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "CAllocationCount",
            ]
        ),
        .testTarget(
            name: "FlatlandSyncTests",
            dependencies: [
                "FlatlandSync", "FlatlandHTTP", "Flatland", "FlatlandJSON", "FlatlandServer", "FlatlandSQLite",
                "FlatlandFixtures", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "FlatlandJSONTests", dependencies: ["FlatlandJSON", "CFlatlandSIMD"]),
        .testTarget(name: "FlatlandTests", dependencies: ["Flatland", "FlatlandFixtures", "FlatlandSQLite"]),
        .testTarget(name: "FlatlandCLITests", dependencies: ["FlatlandCLI", "FlatlandJSON", "CAllocationCount"]),
        .testTarget(
            name: "FlatlandSQLiteTests",
            dependencies: [
                "FlatlandSQLite", "Flatland", "FlatlandJSON", "FlatlandFixtures", "FlatlandCLI",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "FlatlandHTTPTests",
            dependencies: [
                "FlatlandHTTP", "FlatlandServer", "Flatland", "FlatlandFixtures", "FlatlandJSON", "FlatlandSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "FlatlandServerTests",
            dependencies: [
                "FlatlandServer", "Flatland", "FlatlandFixtures", "FlatlandJSON",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
)
