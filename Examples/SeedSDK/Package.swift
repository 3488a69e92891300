// swift-tools-version: 6.1
// An example SDK for the seed's API: it links Flatland and adds its entity types.
import PackageDescription

let package = Package(
    name: "SeedSDK",
    platforms: [.macOS(.v15)],
    products: [.library(name: "SeedSDK", targets: ["SeedSDK"])],
    dependencies: [
        .package(name: "Flatland", path: "../.."),
        // For its tests only: the sample server to talk to, and its test controls.
        .package(name: "FlatlandServer", path: "../../Server"),
    ],
    targets: [
        .target(
            name: "SeedSDK",
            dependencies: [
                .product(name: "Flatland", package: "Flatland"),
                .product(name: "FlatlandHTTP", package: "Flatland"),
            ]
        ),
        .testTarget(
            name: "SeedSDKTests",
            dependencies: [
                "SeedSDK", .product(name: "FlatlandServer", package: "FlatlandServer"),
                .product(name: "FlatlandServerTesting", package: "FlatlandServer"),
            ]
        ),
    ]
)
