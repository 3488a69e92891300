import FlatlandJSON
import Foundation
import Testing

@Suite("flatland ingest")
struct IngestCLITests {
    @Test func untypedModeDecidesWhatIsAnEntity() async throws {
        let ws = try Workspace()
        try ws.write(
            "a.json",
            #"""
            [{"uuid":"U-1","a":1},{"uuid":"u-","a":2},{"uuid":"1-a","a":3},
             {"uuid":"u1-x","n":1,"kid":{"uuid":"k-1","z":true}},{"uuid":5},{"uuid":1.5},{"uuid":null},
             {"uuid":"x-1","uuid2":"y"},{"uuid":"u-1-2"},{"uuid":"u_1-x"},{"uuid":"-x"},
             {"wrap":{"uuid":"w-9","list":[{"uuid":"w-8"},2]}}]
            """#)
        let run = try await ws.run(["ingest", "--dump", "a.json"])
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty)
        #expect(
            try dumpLines(run.stdout)
                == expectedLines([
                    #"{"kind":"entity","uuid":"k-1","type":"k","fields":{"z":true}}"#,
                    #"{"kind":"entity","uuid":"u-1-2","type":"u","fields":{}}"#,
                    #"{"kind":"entity","uuid":"u1-x","type":"u1","fields":{"n":1,"kid":{"$ref":"k-1"}}}"#,
                    #"{"kind":"entity","uuid":"w-8","type":"w","fields":{}}"#,
                    #"{"kind":"entity","uuid":"w-9","type":"w","fields":{"list":[{"$ref":"w-8"},2]}}"#,
                    #"{"kind":"entity","uuid":"x-1","type":"x","fields":{"uuid2":"y"}}"#,
                    #"{"kind":"task","source":"a.json","items":["u1-x","x-1","u-1-2","w-9"]}"#,
                ]))
    }

    static let fileA = #"{"uuid":"u-1","name":"A","age":1,"tags":["t"]}"#
    static let fileB = #"[{"age":2,"uuid":"u-1"},{"uuid":"u-2","friend":{"uuid":"u-1","name":"A2"}}]"#
    static let fileC = #"{"offset":0,"total":2,"data":[{"uuid":"u-2","gone":null},"not an entity"]}"#

    @Test(arguments: [[], ["--chunk-size", "1"], ["--chunk-size", "7"]])
    func filesAreTasksAppliedInOrder(extra: [String]) async throws {
        let ws = try Workspace()
        try ws.write("a.json", Self.fileA)
        try ws.write("sub/b.json", Self.fileB)
        try ws.write("c.json", Self.fileC)
        let cPath = ws.url.appendingPathComponent("c.json").path
        let run = try await ws.run(["ingest", "--dump"] + extra + ["a.json", "./sub/b.json", cPath])
        #expect(run.status == 0)
        #expect(
            try dumpLines(run.stdout)
                == expectedLines([
                    #"{"kind":"entity","uuid":"u-1","type":"u","fields":{"name":"A2","age":2,"tags":["t"]}}"#,
                    #"{"kind":"entity","uuid":"u-2","type":"u","fields":{"friend":{"$ref":"u-1"},"gone":null}}"#,
                    #"{"kind":"task","source":"a.json","items":["u-1"]}"#,
                    #"{"kind":"task","source":"./sub/b.json","items":["u-1","u-2"]}"#,
                    #"{"kind":"task","source":"\#(cPath)","items":["u-2"]}"#,
                ]))
    }

    static func page(_ offset: Int, _ ids: [String?], total: Int?) -> String {
        let items = ids.map { id in id.map { #"{"uuid":"\#($0)","p":\#(offset)}"# } ?? #"{"note":1}"# }
        let totalMember = total.map { #","total":\#($0)"# } ?? ""
        return #"{"offset":\#(offset),"count":\#(ids.count)\#(totalMember),"data":[\#(items.joined(separator: ","))]}"#
    }

    @Test func endpointSlicesLandAtTheirPositions() async throws {
        let ws = try Workspace()
        try ws.write("p3.json", Self.page(14, ["u-14", "u-15"], total: 47))
        try ws.write("p1.json", Self.page(10, ["u-10", nil], total: 47))
        try ws.write("p2.json", Self.page(12, ["u-12", "u-13"], total: nil))
        let endpoint = "/users/friends/?offset=10&count=2&field=firstname,age&gender=male"
        let run = try await ws.run(["ingest", "--dump", "--endpoint", endpoint, "p3.json", "p1.json", "p2.json"])
        #expect(run.status == 0)
        let lines = try dumpLines(run.stdout)
        let nulls = Array(repeating: "null", count: 10).joined(separator: ",")
        #expect(
            lines.suffix(4)
                == (try expectedLines([
                    #"{"kind":"task","source":"p3.json","items":["u-14","u-15"]}"#,
                    #"{"kind":"task","source":"p1.json","items":["u-10"]}"#,
                    #"{"kind":"task","source":"p2.json","items":["u-12","u-13"]}"#,
                    #"{"kind":"endpoint","endpoint":"/users/friends/?gender=male","total":47,"items":[\#(nulls),"u-10",null,"u-12","u-13","u-14","u-15"]}"#,
                ])))
        #expect(lines.count == 9)
        #expect(
            lines.first == (try expectedLines([#"{"kind":"entity","uuid":"u-10","type":"u","fields":{"p":10}}"#]))[0])
    }

    @Test func aNonSliceResponseReplacesTheEndpointList() async throws {
        let ws = try Workspace()
        try ws.write("p.json", Self.page(2, ["u-2"], total: 9))
        try ws.write("all.json", #"[{"uuid":"u-7"},{"uuid":"u-2"}]"#)
        let run = try await ws.run(["ingest", "--dump", "--endpoint", "/u?b=1&a=2", "p.json", "all.json"])
        #expect(run.status == 0)
        #expect(
            try dumpLines(run.stdout).last
                == (try expectedLines([#"{"kind":"endpoint","endpoint":"/u?a=2&b=1","total":2,"items":["u-7","u-2"]}"#]))[
                    0])
    }

    @Test func withoutAnEndpointThereAreNoEndpointLines() async throws {
        let ws = try Workspace()
        try ws.write("p.json", Self.page(2, ["u-2"], total: 9))
        let run = try await ws.run(["ingest", "--dump", "p.json"])
        #expect(try dumpLines(run.stdout).allSatisfy { $0["kind"] != "endpoint" })
        #expect(try dumpLines(run.stdout).count == 2)
    }

    @Test func versionKeyRules() async throws {
        let ws = try Workspace()
        try ws.write("1.json", #"[{"uuid":"u-1","v":2,"n":"a"},{"uuid":"u-2","n":"no version"},{"uuid":"u-3","v":5}]"#)
        // Not greater: skipped entirely, still listed. Either side missing: applies.
        try ws.write(
            "2.json",
            #"[{"uuid":"u-1","v":2,"n":"same"},{"uuid":"u-2","v":1,"n":"now versioned"},{"uuid":"u-1","n":"unversioned"}]"#
        )
        // Nested entities are judged on their own versions; within one response entities apply
        // in the order their objects close.
        try ws.write(
            "3.json",
            #"""
            [{"uuid":"u-3","v":4,"n":"old parent","kid":{"uuid":"u-1","v":3,"n":"kid newer"}},
             {"uuid":"u-4","v":2,"n":"outer","kid":{"uuid":"u-4","v":3,"n":"inner"}},
             {"uuid":"u-5","v":1,"n":"one"},{"uuid":"u-5","v":3,"n":"three"},{"uuid":"u-5","v":2,"n":"two"}]
            """#)
        let run = try await ws.run(["ingest", "--dump", "--version-key", "v", "1.json", "2.json", "3.json"])
        #expect(run.status == 0)
        #expect(
            try dumpLines(run.stdout)
                == expectedLines([
                    #"{"kind":"entity","uuid":"u-1","type":"u","fields":{"v":3,"n":"kid newer"}}"#,
                    #"{"kind":"entity","uuid":"u-2","type":"u","fields":{"n":"now versioned","v":1}}"#,
                    #"{"kind":"entity","uuid":"u-3","type":"u","fields":{"v":5}}"#,
                    #"{"kind":"entity","uuid":"u-4","type":"u","fields":{"v":3,"n":"inner"}}"#,
                    #"{"kind":"entity","uuid":"u-5","type":"u","fields":{"v":3,"n":"three"}}"#,
                    #"{"kind":"task","source":"1.json","items":["u-1","u-2","u-3"]}"#,
                    #"{"kind":"task","source":"2.json","items":["u-1","u-2"]}"#,
                    #"{"kind":"task","source":"3.json","items":["u-3","u-4","u-5"]}"#,
                ]))
    }

    @Test func idKeyOption() async throws {
        let ws = try Workspace()
        try ws.write("a.json", #"{"id":"u-1","uuid":"x-9","n":1,"k":{"id":"d-1"},"j":{"uuid":"x-2"}}"#)
        let run = try await ws.run(["ingest", "--dump", "--id-key", "id", "a.json"])
        #expect(run.status == 0)
        #expect(
            try dumpLines(run.stdout)
                == expectedLines([
                    #"{"kind":"entity","uuid":"d-1","type":"d","fields":{}}"#,
                    #"{"kind":"entity","uuid":"u-1","type":"u","fields":{"uuid":"x-9","n":1,"k":{"$ref":"d-1"},"j":{"uuid":"x-2"}}}"#,
                    #"{"kind":"task","source":"a.json","items":["u-1"]}"#,
                ]))
    }

    static let failures: [(name: String, text: String, line: Int)] = [
        ("bad.json", "[{\"uuid\":\"u-2\"},\n  {\"uuid\":\"u-3\",}]", 2),
        ("truncated.json", "[{\"uuid\":\"u-2\"},\n{\"uuid\":\"u-3\"}", 2),
        ("garbage.json", "{\"uuid\":\"u-2\"}\n\n x", 3),
        ("empty.json", "", 1),
        (
            "deep.json",
            "{\"uuid\":\"u-2\",\"d\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}",
            1
        ),
    ]

    @Test(arguments: failures)
    func aFailingFileIsNotAppliedAndStopsTheRun(failure: (name: String, text: String, line: Int)) async throws {
        let ws = try Workspace()
        try ws.write("a.json", #"{"uuid":"u-1","n":1}"#)
        try ws.write(failure.name, failure.text)
        try ws.write("c.json", #"{"uuid":"u-9","n":9}"#)
        let run = try await ws.run(["ingest", "--dump", "a.json", failure.name, "c.json"])
        #expect(run.status == 1)
        let pattern = try Regex(
            "^error: \(failure.name.replacingOccurrences(of: ".", with: "\\.")):([0-9]+):([0-9]+): .+\n$")
        let match = try #require(run.stderr.wholeMatch(of: pattern), "stderr: \(run.stderr)")
        #expect(Int(match.output[1].substring ?? "") == failure.line)
        #expect((Int(match.output[2].substring ?? "") ?? 0) >= 1)
        // The dump still shows the store as it stands: the first file only.
        #expect(
            try dumpLines(run.stdout)
                == expectedLines([
                    #"{"kind":"entity","uuid":"u-1","type":"u","fields":{"n":1}}"#,
                    #"{"kind":"task","source":"a.json","items":["u-1"]}"#,
                ]))
    }

    @Test func aFailingFirstFileLeavesAnEmptyDump() async throws {
        let ws = try Workspace()
        try ws.write("bad.json", #"{"uuid":"u-1","#)
        let run = try await ws.run(["ingest", "--dump", "bad.json"])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("error: bad.json:1:"))
        #expect(run.stdout.isEmpty)
    }

    @Test func chunkSizeOneGivesTheSameDump() async throws {
        let ws = try Workspace()
        try ws.write("a.json", Self.fileA)
        try ws.write("b.json", Self.fileB)
        try ws.write("p.json", Self.page(3, ["u-3", nil, "u-5"], total: 10))
        try ws.write(
            "deep.json",
            #"{"uuid":"z-1","a":{"b":[{"c":{"uuid":"z-2","d":[[{"e":{"uuid":"z-3"}}]]}}]},"é":"ü\u00e9\n"}"#)
        let files = ["a.json", "b.json", "p.json", "deep.json"]
        let whole = try await ws.run(["ingest", "--dump", "--endpoint", "/x?offset=3", "--version-key", "v"] + files)
        let bytewise = try await ws.run(
            ["ingest", "--dump", "--chunk-size", "1", "--endpoint", "/x?offset=3", "--version-key", "v"] + files)
        #expect(whole.status == 0)
        #expect(bytewise.status == 0)
        #expect(try dumpLines(whole.stdout).count == 12)
        #expect(try dumpLines(bytewise.stdout) == dumpLines(whole.stdout))
    }

    @Test func standardInputIsAFile() async throws {
        let ws = try Workspace()
        let run = try await ws.run(["ingest", "--dump", "-"], stdin: Data(#"[{"uuid":"q-1"}]"#.utf8))
        #expect(run.status == 0)
        #expect(
            try dumpLines(run.stdout)
                == expectedLines([
                    #"{"kind":"entity","uuid":"q-1","type":"q","fields":{}}"#,
                    #"{"kind":"task","source":"-","items":["q-1"]}"#,
                ]))
    }

    @Test func withoutDumpASummary() async throws {
        let ws = try Workspace()
        try ws.write("a.json", #"[{"uuid":"u-1"},{"uuid":"u-2"},{"uuid":"d-1"}]"#)
        let run = try await ws.run(["ingest", "--endpoint", "/u", "a.json"])
        #expect(run.status == 0)
        #expect(!run.stdout.contains("\"kind\""))
        #expect(run.stdout.contains("entities: 3"))
        #expect(run.stdout.contains("u: 2"))
        #expect(run.stdout.contains("collections: 2"))
        #expect(run.stdout.split(separator: "\n").count <= 5)
    }

    @Test func usageProblemsExitTwo() async throws {
        let ws = try Workspace()
        #expect(try await ws.run(["ingest"]).status == 2)
        #expect(try await ws.run(["ingest", "--chunk-size", "0", "a.json"]).status == 2)
        let missing = try await ws.run(["ingest", "missing.json"])
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("error: missing.json"))
    }

    @Test func anUnreadableFileStopsTheRunAndTheDumpIsStillPrinted() async throws {
        let ws = try Workspace()
        try ws.write("a.json", #"{"uuid":"u-1"}"#)
        try ws.write("c.json", #"{"uuid":"u-3"}"#)
        let run = try await ws.run(["ingest", "--dump", "a.json", "missing.json", "c.json"])
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("error: missing.json: "))
        #expect(
            try dumpLines(run.stdout)
                == expectedLines([
                    #"{"kind":"entity","uuid":"u-1","type":"u","fields":{}}"#,
                    #"{"kind":"task","source":"a.json","items":["u-1"]}"#,
                ]))
    }
}
