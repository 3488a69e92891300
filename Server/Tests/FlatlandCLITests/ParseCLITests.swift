import Foundation
import Testing

@Suite("flatland parse")
struct ParseCLITests {
    @Test(arguments: [#"{"a":[1,2,3]}"#, "[]", "  \"x\"\n", "-0.5e-3", #"{"é":"\u00e9\ud83d\ude00"}"#])
    func validIsSilentAndExitsZero(text: String) async throws {
        let ws = try Workspace()
        try ws.write("ok.json", text)
        let run = try await ws.run(["parse", "ok.json"])
        #expect(run.status == 0)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.isEmpty)
    }

    @Test(arguments: [
        ("{\"a\":1,}", 1), ("[1,\n 2,\n x]", 3), ("{\"a\":1}\n{\"b\":2}", 2), ("", 1), ("[1] // c", 1),
        ("\u{FEFF}[1]", 1), ("[\"\\ud800\"]", 1),
    ])
    func invalidExitsOneWithLocation(text: String, line: Int) async throws {
        let ws = try Workspace()
        try ws.write("bad.json", text)
        let run = try await ws.run(["parse", "bad.json"])
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        let match = try #require(run.stderr.wholeMatch(of: /error: bad\.json:([0-9]+):([0-9]+): .+\n/), "\(run.stderr)")
        #expect(Int(match.output.1) == line)
        #expect((Int(match.output.2) ?? 0) >= 1)
    }

    @Test func invalidUTF8ExitsOne() async throws {
        let ws = try Workspace()
        try ws.write("bad.json", Data([0x5B, 0x22, 0xC3, 0x28, 0x22, 0x5D]))
        let run = try await ws.run(["parse", "bad.json"])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: bad.json:1:"))
    }

    @Test func usageAndIOProblemsExitTwo() async throws {
        let ws = try Workspace()
        #expect(try await ws.run(["parse", "missing.json"]).status == 2)
        #expect(try await ws.run(["parse"]).status == 2)
        #expect(try await ws.run(["parse", "--no-such-flag", "x.json"]).status == 2)
        #expect(try await ws.run(["parse", "."]).status == 2)
        #expect(try await ws.run(["parse", "--chunk-size", "0", "x.json"]).status == 2)
    }

    @Test func multipleValues() async throws {
        let ws = try Workspace()
        try ws.write("lines.jsonl", "{\"a\":1}\n{\"b\":2}\n[3]\n")
        #expect(try await ws.run(["parse", "lines.jsonl"]).status == 1)
        #expect(try await ws.run(["parse", "--multiple", "lines.jsonl"]).status == 0)
    }

    @Test func comments() async throws {
        let ws = try Workspace()
        try ws.write("c.json", "// head\n{\"a\": /* inline */ 1}\n")
        #expect(try await ws.run(["parse", "c.json"]).status == 1)
        let run = try await ws.run(["parse", "--allow-comments", "c.json"])
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty)
    }

    @Test func statsGoToStandardError() async throws {
        let ws = try Workspace()
        let text = #"{"a":[1,[2,{"b":null}]],"c":"d"}"#
        try ws.write("s.json", text)
        let run = try await ws.run(["parse", "--stats", "s.json"])
        #expect(run.status == 0)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("bytes: \(text.utf8.count)\n"))
        #expect(run.stderr.contains("max depth: 4\n"))
        #expect(run.stderr.contains("values: 8\n"))
        #expect(run.stderr.contains("MB/s:"))
    }

    @Test func standardInput() async throws {
        let ws = try Workspace()
        let good = try await ws.run(["parse", "-"], stdin: Data("[1, 2, {\"x\": true}]".utf8))
        #expect(good.status == 0)
        let bad = try await ws.run(["parse", "-"], stdin: Data("[1, 2,\n]".utf8))
        #expect(bad.status == 1)
        #expect(bad.stderr.hasPrefix("error: -:2:"))
        let chunked = try await ws.run(["parse", "--chunk-size", "1", "-"], stdin: Data(#"{"k":"v"}"#.utf8))
        #expect(chunked.status == 0)
    }
}
