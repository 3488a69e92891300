import ArgumentParser
import FlatlandFixtures

/// `flatland generate`: a seed-shaped response on standard output, to try the other commands on.
struct GenerateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Write a deterministic seed-shaped response (a session and a page of users) to standard output."
    )

    @Option(help: "Approximate size in bytes.")
    var bytes: Int = 1_000_000

    @Option(help: "The generator's seed: the same seed and size give the same bytes.")
    var seed: UInt64 = 2026

    func validate() throws {
        guard bytes > 0 else { throw ValidationError("--bytes must be positive") }
    }

    func run() throws {
        var generator = SeedGenerator(seed: seed)
        let document = generator.document(approximateBytes: bytes)
        FileHandleOutput.standardOutput.write(String(decoding: document, as: UTF8.self))
    }
}
