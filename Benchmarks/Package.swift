// swift-tools-version: 6.1
// Benchmarks live in their own package so that Flatland never depends on the harness.
import PackageDescription

let package = Package(
    name: "FlatlandBenchmarks",
    dependencies: [
        .package(path: "..")
    ],
    targets: []
)
