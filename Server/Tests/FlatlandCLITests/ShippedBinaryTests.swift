import Foundation
import Testing

/// What the shipped `flatland` carries: no allocation counter (it defined `malloc`, `calloc` and
/// `realloc` when the benchmarks lived in it), no benchmark commands, no test-only commands.
@Suite("The shipped tool")
struct ShippedBinaryTests {
    /// The symbols `flatland` defines itself, from `nm --defined-only`.
    static func definedSymbols() throws -> Set<String> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["nm", "--defined-only", CLI.productsDirectory.appendingPathComponent("flatland").path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "nm failed")
        return Set(
            String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
                line.split(separator: " ").last.map(String.init)
            })
    }

    @Test func itDefinesNoAllocator() async throws {
        let symbols = try Self.definedSymbols()
        #expect(symbols.count > 1000, "nm saw the binary's own symbols")
        for name in ["malloc", "calloc", "realloc", "free", "flatland_heap_bytes_in_use"] {
            #expect(!symbols.contains(name), "flatland defines \(name)")
        }
    }

    @Test(arguments: [
        "bench", "bench-sqlite", "bench-http", "bench-table", "bench-sync", "bench-load", "persist-stream",
        "persist-alongside",
    ])
    func itHasNoBenchmarkOrTestCommand(_ name: String) async throws {
        let run = try await CLI.run([name])
        #expect(run.status == 2, "flatland \(name) exists")
        #expect(run.stderr.contains("Unexpected argument '\(name)'"))
        let help = try await CLI.run(["--help"])
        #expect(help.status == 0)
        #expect(!help.stdout.contains(" \(name) "))
    }
}
