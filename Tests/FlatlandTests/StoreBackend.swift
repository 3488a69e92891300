import Flatland
import FlatlandSQLite
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a test's store keeps its records. Every store test runs against each backend with the
/// same expectations.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Everything in memory (no persistence).
    case memory
    /// A SQLite file in a temporary directory, with a cache of a few records, so that reads go
    /// through the database; the file is removed when the store is released.
    case sqlite

    var testDescription: String { rawValue }

    /// A new, empty store on this backend.
    func store(
        registry: EntityRegistry = EntityRegistry(), hooks: StoreHooks = StoreHooks(), cacheCapacity: Int = 4,
        taskCollectionLimit: Int? = 64
    ) throws -> Store {
        switch self {
        case .memory:
            return Store(registry: registry, hooks: hooks, taskCollectionLimit: taskCollectionLimit)
        case .sqlite:
            let persistence = try SQLitePersistence(
                path: TemporaryFiles.newPath(),
                options: SQLitePersistence.Options(cacheCapacity: cacheCapacity, removeFilesOnClose: true))
            return Store(
                registry: registry, hooks: hooks, persistence: persistence, taskCollectionLimit: taskCollectionLimit)
        }
    }

    /// Each backend with each of `values`, for tests that already take an argument list.
    static func each<T>(_ values: [T]) -> [(StoreBackend, T)] {
        allCases.flatMap { backend in values.map { (backend, $0) } }
    }
}

/// Unique file paths in a directory of this test process.
enum TemporaryFiles {
    static let directory: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flatland-tests-\(ProcessInfo.processInfo.processIdentifier)"
        ).path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        // Stores an ingest went through are not released before the process ends (the ingestor
        // and its parser hold each other), so their files are removed when it ends.
        atexit { try? FileManager.default.removeItem(atPath: TemporaryFiles.directory) }
        return path
    }()

    /// A path that no file has yet.
    static func newPath(_ suffix: String = ".sqlite") -> String { directory + "/" + UUID().uuidString + suffix }

    /// A new empty directory.
    static func newDirectory() -> String {
        let path = directory + "/" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
