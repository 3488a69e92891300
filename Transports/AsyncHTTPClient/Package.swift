// swift-tools-version: 6.1
// The HTTP transport of FlatlandHTTP over AsyncHTTPClient (SwiftNIO), for Linux servers and
// tools: a package of its own on the library package (`../..`) by path, so that an app that
// links only the library products never resolves SwiftNIO. Its tests run in `Server/` (the
// transport suite needs servers to talk to, and runs there on both transports).
import PackageDescription

let package = Package(
    name: "FlatlandAsyncHTTPClient",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "FlatlandAsyncHTTPClient", targets: ["FlatlandAsyncHTTPClient"])
    ],
    dependencies: [
        .package(name: "Flatland", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
    ],
    targets: [
        .target(
            name: "FlatlandAsyncHTTPClient",
            dependencies: [
                .product(name: "FlatlandHTTP", package: "Flatland"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        )
    ]
)
