import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandSQLite
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Unique paths in a directory of this test process.
enum Scratch {
    static let directory: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flatland-sqlite-tests-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        // Stores an ingest went through are not released before the process ends (the ingestor
        // and its parser hold each other), so their files are removed when it ends.
        atexit { try? FileManager.default.removeItem(atPath: Scratch.directory) }
        return path
    }()

    static func path(_ suffix: String = ".sqlite") -> String { directory + "/" + UUID().uuidString + suffix }

    static func newDirectory() -> String {
        let path = directory + "/" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func remove(_ path: String) {
        for file in [path, path + "-wal", path + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A profile whose schema changed: version 1 kept the age as text under "years".
struct Profile: Entity, Equatable {
    static let prefix = "pf"
    static let classVersion = 2
    var id: EntityID<Profile>
    var name = ""
    var age = 0
    init(id: EntityID<Profile>) { self.id = id }
    static let fields: [Field<Profile>] = [Field("name", \.name), Field("age", \.age)]
    static func migrate(_ fields: inout JSONObject, from classVersion: Int) throws {
        if classVersion < 2, let years = fields["years"]?.stringValue, let age = Int(years) {
            fields["age"] = .number(JSONNumber(age))
            fields["years"] = nil
        }
    }
}

func registry() throws -> EntityRegistry {
    try EntityRegistry([SeedUser.self, SeedDevice.self, SeedSession.self, Profile.self])
}

/// Everything a store holds, as comparable text.
func fingerprint(_ reader: some StoreReader) -> [String] {
    var lines: [String] = []
    for id in reader.allIDs() {
        guard let record = reader.record(id: id) else {
            lines.append("\(id) missing")
            continue
        }
        var writer = JSONWriter()
        writer.value(.object(record.fields))
        lines.append(
            "\(id) \(record.prefix) v\(record.dataVersion.map { "\($0)" } ?? "-") c\(record.classVersion) "
                + "\(record.presentFields) \(writer.string)")
    }
    for collection in reader.collections {
        // A task given no identifier gets a random one: compare the rest.
        let display = collection.displayIdentifier.hasPrefix("t-") ? "t-?" : collection.displayIdentifier
        lines.append(
            "\(display) \(collection.kind) \(collection.total ?? -1) "
                + "\(collection.items.map { $0 ?? "-" })")
    }
    lines.append("counts \(reader.countsByPrefix.sorted { $0.key < $1.key })")
    return lines
}

/// Fills an in-memory store and a new store file at `path` with `fill`, expects both to hold
/// the same, and closes the file; returns the in-memory store, to compare a reopened file with.
func fillMemoryAndFile(_ path: String, _ fill: (Store) throws -> Void) throws -> Store {
    let memory = Store(registry: try registry())
    try fill(memory)
    let persistence = try SQLitePersistence(path: path)
    let store = Store(registry: try registry(), persistence: persistence)
    try fill(store)
    #expect(fingerprint(store) == fingerprint(memory))
    persistence.close()
    return memory
}

/// The directory of the built products (the `flatland` executable is there).
var productsDirectory: URL {
    let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") }
    if let bundle { return bundle.bundleURL.deletingLastPathComponent() }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
}
