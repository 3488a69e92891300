import ArgumentParser
import FlatlandFixtures
import FlatlandJSON

/// `flatland demo`: the README's main job, on data the project generates itself.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Generate a seed-shaped response and show what Flatland does with it."
    )

    @Option(help: "Approximate size of the generated response, in bytes.")
    var bytes: Int = 2_000_000

    func run() throws {
        var generator = SeedGenerator(seed: 2026)
        let document = generator.document(approximateBytes: bytes)
        print("Generated a seed-shaped response: \(document.count) bytes, \(generator.userIDs.count) users.")
        print("Parsing it with FlatlandJSON in 64 KiB chunks (strict RFC 8259)...")
        let counter = StatsHandler()
        let parser = JSONStreamParser(handler: counter)
        let start = monotonicSeconds()
        var offset = 0
        while offset < document.count {
            let end = min(document.count, offset + 65536)
            try parser.feed(document[offset..<end])
            offset = end
        }
        try parser.finish()
        let seconds = monotonicSeconds() - start
        print("  values: \(counter.values), max depth: \(counter.maxDepth)")
        print("  throughput: \(formatted(Double(document.count) / 1e6 / seconds, 1)) MB/s")

        print("\nA broken copy (one byte changed near the end) is rejected with its position:")
        var broken = document
        broken[broken.count - 3] = UInt8(ascii: "}")
        do {
            try JSONStreamParser.parse(broken, handler: StatsHandler(), chunkSize: 65536)
        } catch {
            print("  error: \(error.description) (code \(error.code), near \"\(error.excerpt)\")")
        }
    }
}
