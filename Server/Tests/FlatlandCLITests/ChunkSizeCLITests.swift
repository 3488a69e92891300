import Foundation
import Testing

/// `--chunk-size` takes 1 byte to 64 MiB in every command that has it; anything else is a usage
/// error (exit 2) with a message naming the option, never an allocation failure.
@Suite struct ChunkSizeCLITests {
    static let commands = ["parse", "ingest"]

    @Test(
        arguments: commands,
        [
            "0", "-1", "67108865", "100000000000", "9223372036854775807", "-9223372036854775808",
        ])
    func outOfRangeIsAUsageError(_ command: String, _ size: String) async throws {
        let ws = try Workspace()
        try ws.write("a.json", #"[{"uuid":"u-1","name":"a"}]"#)
        // `--chunk-size=-1`: with a space, a negative number would read as an option.
        let run = try await ws.run([command, "--chunk-size=\(size)", "a.json"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("--chunk-size must be between 1 and 67108864 bytes (64 MiB), not \(size)"))
        #expect(run.stdout.isEmpty)
    }

    @Test(arguments: commands)
    func aNumberTooBigForAnIntIsAUsageError(_ command: String) async throws {
        let ws = try Workspace()
        try ws.write("a.json", "[]")
        let run = try await ws.run([command, "--chunk-size", "99999999999999999999999", "a.json"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("chunk-size"))
    }

    @Test(arguments: commands, ["1", "67108864"])
    func theBoundsThemselvesAreAccepted(_ command: String, _ size: String) async throws {
        let ws = try Workspace()
        try ws.write("a.json", #"[{"uuid":"u-1","name":"a"}]"#)
        let run = try await ws.run([command, "--chunk-size", size, "a.json"])
        #expect(run.status == 0, "\(run.stderr)")
    }
}
