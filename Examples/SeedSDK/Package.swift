// swift-tools-version: 6.1
// An example SDK for the seed's API: it links Flatland and adds its entity types.
import PackageDescription

let package = Package(
    name: "SeedSDK",
    products: [.library(name: "SeedSDK", targets: ["SeedSDK"])],
    dependencies: [.package(name: "Flatland", path: "../..")],
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
            dependencies: ["SeedSDK", .product(name: "FlatlandServer", package: "Flatland")]
        ),
    ]
)
