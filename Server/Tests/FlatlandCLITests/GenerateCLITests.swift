import FlatlandJSON
import Foundation
import Testing

@Suite("flatland generate")
struct GenerateCLITests {
    @Test func writesDeterministicSeedShapedJSON() async throws {
        let first = try await CLI.run(["generate", "--bytes", "20000", "--seed", "7"])
        let again = try await CLI.run(["generate", "--bytes", "20000", "--seed", "7"])
        let other = try await CLI.run(["generate", "--bytes", "20000", "--seed", "8"])
        #expect(first.status == 0)
        #expect(first.stdout == again.stdout)
        #expect(first.stdout != other.stdout)
        let value = try JSONValue(parsing: first.stdout)
        #expect(value["session"]?["uuid"]?.stringValue?.hasPrefix("s-") == true)
        guard case .array(let users)? = value["users"]?["data"] else {
            Issue.record("no users slice")
            return
        }
        #expect(!users.isEmpty)
        #expect(value["users"]?["total"]?.numberValue?.text == String(users.count))
        #expect(users.allSatisfy { $0["uuid"]?.stringValue?.hasPrefix("u-") == true })
        // About the size asked for (the generator estimates users of about 950 bytes).
        #expect(first.stdout.utf8.count > 10_000 && first.stdout.utf8.count < 40_000)
    }

    @Test func rejectsANonPositiveSize() async throws {
        let run = try await CLI.run(["generate", "--bytes", "0"])
        #expect(run.status == 2)
    }
}
