import Foundation
import Testing

/// The runner the tool's suite drives `flatland` through.
@Suite("CLI.run, the suite's runner")
struct CLIRunnerTests {
    /// A child that fills the standard error pipe before it closes standard output: the runner
    /// reads both at once, so the child is never left waiting for room in a pipe. The case gives
    /// up after a minute rather than hang the suite.
    @Test func aChildThatWritesMuchToStandardErrorFirstIsReadWhole() async throws {
        let script = #"head -c 200000 /dev/zero | tr '\0' e >&2; printf done"#
        // Raced against a minute in tasks of their own: a task group would wait for the run.
        let (results, continuation) = AsyncStream.makeStream(of: CLIRun?.self)
        let running = Task {
            continuation.yield(try? await CLI.run(["-c", script], executable: URL(fileURLWithPath: "/bin/sh")))
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(60))
            continuation.yield(nil)
        }
        var ended: CLIRun?
        for await result in results {
            ended = result
            break
        }
        timer.cancel()
        _ = running
        let run = try #require(ended, "the child had not ended after 60 s")
        #expect(run.status == 0)
        #expect(run.stdout == "done")
        #expect(run.stderr.utf8.count == 200_000)
        #expect(run.stderr.utf8.allSatisfy { $0 == UInt8(ascii: "e") })
    }
}
