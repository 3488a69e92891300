import FlatlandJSON
import Foundation

/// The results of one `flatland bench` run, as a table, a JSON object or an SVG chart.
struct BenchReport {
    var rounds: Int
    var results: [BenchResult]
    var streaming: StreamingMemory.Result?
    var missing: [String]
    var dataDirectory: String
    /// Bytes per position of the task and endpoint collections (issue 25 item 2): given at the
    /// top level of `--json` as `collection_bytes_per_position` and judged by its bar, when a run
    /// measures it (`nil`: the key is `null` and the bar is not listed).
    var collectionBytesPerPosition: Double? = nil
    /// The bars this report judges: the issue's, or those of a hidden `--bars-file`.
    var barsJudged: [BenchBar] = BenchBar.all

    /// The build the figures come from: "release", or "debug" (not to be quoted).
    static var build: String {
        #if DEBUG
            "debug"
        #else
            "release"
        #endif
    }

    static var machine: String {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
            .first { $0.hasPrefix("model name") }?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces)
            ?? "unknown CPU"
        return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores"
    }

    /// The run against its bars (``BenchBar/all`` unless a bars file replaced them); the
    /// collections' bar only when this run measured bytes per position.
    var bars: [BenchBar.Check] {
        barsJudged.filter { $0.metric != .collectionBytesPerPosition || collectionBytesPerPosition != nil }.map {
            $0.check(
                results: results, streaming: streaming, collectionBytesPerPosition: collectionBytesPerPosition)
        }
    }

    /// The `Bars:` block: one line per bar with the run's value and its verdict.
    func barsBlock() -> [String] {
        ["Bars:"]
            + bars.map { check in
                "  "
                    + pad(
                        check.bar.metric.rawValue + " " + check.bar.comparison.rawValue + " "
                            + "\(check.bar.limit)", 48)
                    + pad(check.bar.dataset ?? "-", 20) + pad(check.value.map { formatted($0, 3) } ?? "-", 9)
                    + check.verdict
            }
    }

    func table() -> String {
        var lines: [String] = []
        lines.append("Flatland benchmark: median of \(rounds) interleaved rounds, release build; \(Self.machine)")
        lines.append("")
        lines.append(
            pad("dataset", 20) + pad("MB", 8) + pad("yajl raw", 10) + pad("yajl nochk", 12) + pad("parse", 10)
                + pad("ingest", 10) + pad("untyped", 10) + pad("JSONDecoder", 13) + pad("JSONDec tuned", 15)
                + pad("JSONSerial.", 13) + pad("ingest/JSONDec", 16) + pad("ingest/tuned", 14)
                + pad("ingest/yajl", 13) + pad("parse/yajl", 12) + pad("parse/nochk", 13) + pad("untyped/typed", 15)
                + pad("entities/s", 12) + pad("mallocs/entity", 16))
        for r in results {
            let ingestMBps = r.mbps(r.ingest)
            lines.append(
                pad(r.name, 20) + pad(formatted(Double(r.bytes) / 1e6, 1), 8) + pad(f(r.mbps(r.yajlRaw)), 10)
                    + pad(f(r.mbps(r.yajlRawNoCheck)), 12) + pad(f(r.mbps(r.parse)), 10) + pad(f(ingestMBps), 10)
                    + pad(f(r.mbps(r.untypedIngest)), 10) + pad(f(r.mbps(r.jsonDecoder)), 13)
                    + pad(f(r.mbps(r.jsonDecoderTuned)), 15) + pad(f(r.mbps(r.jsonSerialization)), 13)
                    + pad(x(r.ingestVsJSONDecoder), 16) + pad(x(r.ingestVsJSONDecoderTuned), 14)
                    + pad(x(r.ingestVsYAJLRaw), 13) + pad(x(r.parseVsYAJLRaw), 12) + pad(x(r.parseVsYAJLRawNoCheck), 13)
                    + pad(x(r.untypedVsTyped), 15)
                    + pad(
                        r.ingest.flatMap { t in r.entities.map { formatted(Double($0) / t / 1e6, 2) + "M" } } ?? "-", 12
                    )
                    + pad(
                        r.mallocsPerEntity.map {
                            formatted($0, 2) + " (floor " + (r.mallocFloorPerEntity.map { formatted($0, 2) } ?? "-")
                                + ", JSONDecoder " + formatted(r.jsonDecoderMallocsPerEntity ?? 0, 1) + ")"
                        } ?? "-", 16))
        }
        lines.append("")
        lines.append(
            "Throughput in MB/s. parse = FlatlandJSON with a no-op handler; ingest = typed entities into a store; "
                + "untyped = the same with no type registered; JSONDec tuned = one reused decoder and date parser; "
                + "yajl nochk = raw yajl without its UTF-8 check.")
        if let s = streaming {
            lines.append(
                "Streaming ingest, 64 KiB chunks, nothing kept: peak RSS \(formatted(s.peakRSSMegabytes1MB, 1)) MB for 1 MB, "
                    + "\(formatted(s.peakRSSMegabytes100MB, 1)) MB for 100 MB "
                    + "(difference \(formatted(s.peakRSSMegabytes100MB - s.peakRSSMegabytes1MB, 1)) MB).")
        }
        if let c = collectionBytesPerPosition {
            lines.append("Collections: \(formatted(c, 1)) bytes per position.")
        }
        if !missing.isEmpty { lines.append("Not found in \(dataDirectory): \(missing.joined(separator: ", ")).") }
        lines.append("")
        lines += barsBlock()
        return lines.joined(separator: "\n")
    }

    /// Where each dataset's ingest spends its time (medians of the rounds): reading the response
    /// (parse, walk, decoding), applying it to the store, freeing the store; ms and ms per MB.
    func phasesTable() -> String {
        var lines = ["", "Ingest steps, median ms (ms per MB):"]
        lines.append(pad("dataset", 20) + pad("read", 18) + pad("apply", 18) + pad("free", 18))
        for r in results {
            guard let p = r.ingestPhases else { continue }
            let megabytes = Double(r.bytes) / 1e6
            func cell(_ seconds: Double) -> String {
                formatted(seconds * 1000, 1) + " (" + formatted(seconds * 1000 / megabytes, 2) + ")"
            }
            lines.append(pad(r.name, 20) + pad(cell(p.read), 18) + pad(cell(p.apply), 18) + pad(cell(p.free), 18))
        }
        return lines.joined(separator: "\n")
    }

    private func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
    }
    private func f(_ v: Double?) -> String { v.map { formatted($0, 1) } ?? "-" }
    private func x(_ v: Double?) -> String { v.map { formatted($0, 2) + "x" } ?? "-" }

    /// A measured value as the report gives it: to three decimals; `nil` when not finite.
    static func reported(_ value: Double) -> Double? {
        value.isFinite ? (value * 1000).rounded() / 1000 : nil
    }

    func json() -> String {
        func number(_ v: Double?) -> JSONValue {
            guard let v = v.flatMap(Self.reported), let n = JSONNumber(v) else { return .null }
            return .number(n)
        }
        var datasets = JSONObject()
        for r in results {
            let ingest = r.mbps(r.ingest)
            datasets[r.name] = .object([
                "bytes": .number(JSONNumber(r.bytes)),
                "entities": r.entities.map { .number(JSONNumber($0)) } ?? .null,
                "yajl_raw_mbps": number(r.mbps(r.yajlRaw)),
                "parse_mbps": number(r.mbps(r.parse)),
                "ingest_mbps": number(ingest),
                "jsondecoder_mbps": number(r.mbps(r.jsonDecoder)),
                "jsonserialization_mbps": number(r.mbps(r.jsonSerialization)),
                "jsondecoder_tuned_mbps": number(r.mbps(r.jsonDecoderTuned)),
                "ingest_vs_jsondecoder_tuned": number(r.ingestVsJSONDecoderTuned),
                "yajl_raw_nocheck_mbps": number(r.mbps(r.yajlRawNoCheck)),
                "parse_vs_yajl_raw_nocheck": number(r.parseVsYAJLRawNoCheck),
                "untyped_ingest_mbps": number(r.mbps(r.untypedIngest)),
                "untyped_vs_typed": number(r.untypedVsTyped),
                "ingest_vs_jsondecoder": number(r.ingestVsJSONDecoder),
                "ingest_vs_yajl_raw": number(r.ingestVsYAJLRaw),
                "parse_vs_yajl_raw": number(r.parseVsYAJLRaw),
                "mallocs_per_entity": number(r.mallocsPerEntity),
                "jsondecoder_mallocs_per_entity": number(r.jsonDecoderMallocsPerEntity),
                "mallocs_floor_per_entity": number(r.mallocFloorPerEntity),
                "ingest_phases_ms": r.ingestPhases.map { p in
                    .object([
                        "read": number(p.read * 1000), "apply": number(p.apply * 1000), "free": number(p.free * 1000),
                    ])
                } ?? .null,
            ])
        }
        var root: JSONObject = [
            "bars": .array(
                bars.map { check in
                    .object([
                        "metric": .string(check.bar.metric.rawValue),
                        "dataset": check.bar.dataset.map { .string($0) } ?? .null,
                        "comparison": .string(check.bar.comparison.rawValue),
                        "bar": number(check.bar.limit),
                        "value": number(check.value),
                        "met": check.met.map { .bool($0) } ?? .null,
                    ])
                }),
            "machine": .string(Self.machine),
            "rounds": .number(JSONNumber(rounds)),
            "datasets": .object(datasets),
            "missing": .array(missing.map { .string($0) }),
            // Issue 25 item 2's figure (see `collectionBytesPerPosition`).
            "collection_bytes_per_position": number(collectionBytesPerPosition),
        ]
        root["collection_bytes_per_position"] = number(collectionBytesPerPosition)
        if let s = streaming {
            root["streaming"] = .object([
                "peak_rss_mb_1mb": number(s.peakRSSMegabytes1MB),
                "peak_rss_mb_100mb": number(s.peakRSSMegabytes100MB),
            ])
        } else {
            root["streaming"] = .null
        }
        return JSONValue.object(root).jsonString(pretty: true)
    }

    /// Grouped horizontal bars: one group per dataset, one bar per contender, MB/s.
    func svg() -> String {
        let contenders: [(String, String, (BenchResult) -> Double?)] = [
            ("raw yajl", "#9e9e9e", { $0.mbps($0.yajlRaw) }),
            ("raw yajl, no UTF-8 check", "#cfcfcf", { $0.mbps($0.yajlRawNoCheck) }),
            ("FlatlandJSON parse", "#64b5f6", { $0.mbps($0.parse) }),
            ("Flatland ingest", "#1565c0", { $0.mbps($0.ingest) }),
            ("Flatland untyped", "#7e57c2", { $0.mbps($0.untypedIngest) }),
            ("JSONDecoder", "#ef6c00", { $0.mbps($0.jsonDecoder) }),
            ("JSONDecoder, tuned", "#bf360c", { $0.mbps($0.jsonDecoderTuned) }),
            ("JSONSerialization", "#ffb74d", { $0.mbps($0.jsonSerialization) }),
        ]
        let maxValue = results.flatMap { r in contenders.compactMap { $0.2(r) } }.max() ?? 1
        let barHeight = 14.0
        let groupGap = 18.0
        let left = 150.0
        let width = 560.0
        // The legend wraps to a second row, and the bars start under it.
        var legend = ""
        var lx = 10.0
        var ly = 24.0
        for c in contenders {
            let entryWidth = Double(c.0.count) * 7 + 34
            if lx + entryWidth > left + width + 100 {
                lx = 10
                ly += 18
            }
            legend += "<rect x=\"\(lx)\" y=\"\(ly)\" width=\"12\" height=\"12\" fill=\"\(c.1)\"/>"
            legend += "<text x=\"\(lx + 16)\" y=\"\(ly + 10)\">\(c.0)</text>\n"
            lx += entryWidth
        }
        var y = ly + 26
        var body = ""
        for r in results {
            body += "<text x=\"10\" y=\"\(y + barHeight)\" font-weight=\"bold\">\(r.name)</text>\n"
            for c in contenders {
                guard let v = c.2(r) else { continue }
                let w = max(1, v / maxValue * width)
                body +=
                    "<rect x=\"\(left)\" y=\"\(y)\" width=\"\(formatted(w, 1))\" height=\"\(barHeight - 2)\" fill=\"\(c.1)\"/>"
                    + "<text x=\"\(left + w + 4)\" y=\"\(y + barHeight - 3)\">\(formatted(v, 0)) MB/s</text>\n"
                y += barHeight
            }
            y += groupGap
        }
        let height = y + 10
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(left + width + 110))" height="\(Int(height))" \
            font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="16" font-size="13" font-weight="bold">Throughput, MB/s (median of \(rounds) interleaved rounds; longer is better)</text>
            \(legend)\(body)</svg>

            """
    }
}
