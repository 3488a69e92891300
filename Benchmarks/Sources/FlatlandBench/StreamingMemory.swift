import Flatland
import FlatlandFixtures
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Peak resident memory of a streaming ingest, each size in a fresh child process.
enum StreamingMemory {
    struct Result {
        var peakRSSMegabytes1MB: Double
        var peakRSSMegabytes100MB: Double
    }

    /// Writes the 1 MB and 100 MB seed-shaped documents to files and ingests each in a child.
    static func measure() throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatland-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var peaks: [Double] = []
        for megabytes in [1, 100] {
            let file = directory.appendingPathComponent("seed-\(megabytes)MB.json")
            do {
                var generator = SeedGenerator(seed: 2026)
                try Data(generator.document(approximateBytes: megabytes * 1_000_000)).write(to: file)
            }
            peaks.append(try runChild(["bench", "--stream-rss", file.path]))
        }
        return Result(peakRSSMegabytes1MB: peaks[0], peakRSSMegabytes100MB: peaks[1])
    }

    /// In the child: ingest `file` in 64 KiB chunks through a condition that keeps nothing;
    /// return the peak resident set in MB.
    static func child(file: String) throws -> String {
        let store = Store(registry: seedFixtureRegistry(), hooks: StoreHooks(condition: { _ in false }))
        let ingestor = store.makeIngestor(endpoint: "/users")
        let input = try InputFile(path: file)
        try input.forEachChunk(size: 64 * 1024) { try ingestor.feed($0) }
        _ = try store.commit(ingestor.finish())
        return String(try peakRSSMegabytes())
    }

    /// This process's peak resident set so far, in MB.
    static func peakRSSMegabytes() throws -> Double {
        // VmHWM, not getrusage: ru_maxrss survives exec and would report the parent's peak.
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { throw CLIFailure.invalid("cannot read VmHWM from /proc/self/status") }
        return kilobytes / 1024
    }

    /// Runs this executable with `arguments` in a child process and reads the one number it prints.
    static func runChild(_ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let value = Double(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw CLIFailure.invalid("child \(arguments.joined(separator: " ")) failed") }
        return value
    }
}
