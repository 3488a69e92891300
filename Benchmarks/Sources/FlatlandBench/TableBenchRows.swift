@_spi(FlatlandInternal) import Flatland
import FlatlandSync
import Foundation
import GRDB

/// The rows of `flatland bench-table`: a todo table as an app keeps it, as each contender
/// declares it, and how the table is seeded.
enum TableBenchRows {
    /// The table's name on the server.
    static let table = "todoitem"

    /// Row `i`'s server id: 32 lowercase hexadecimal characters, as the official clients make
    /// them, from a fixed sequence so every run serves the same table.
    static func id(_ i: Int) -> String {
        var hex = ""
        var state = UInt64(truncatingIfNeeded: i) &+ 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2 {
            // splitmix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            let text = String(z, radix: 16)
            hex += String(repeating: "0", count: 16 - text.count) + text
        }
        return hex
    }

    static let tasks = [
        "Buy milk and bread", "Call the plumber about the kitchen sink", "Write the quarterly report",
        "Book flights for the conference", "Renew the car insurance", "Water the plants on the balcony",
        "Review the pull request", "Pick up the dry cleaning",
    ]

    /// Whether row `i` is complete (every third row).
    static func complete(_ i: Int) -> Bool { i % 3 == 0 }

    /// Row `i`'s own fields as the server stores them: text, complete, a number and a date
    /// (milliseconds, as a JavaScript or Swift client writes one).
    static func fields(_ i: Int) -> String {
        let due = ISO8601.format(
            seconds: 1_798_761_600 + i * 600, fraction: (i * 7) % 1000, digits: 3, suffix: "Z")
        return "{\"text\":\"\(tasks[i % tasks.count]) (\(i))\",\"complete\":\(complete(i)),"
            + "\"priority\":\(i % 5),\"dueAt\":\"\(due)\"}"
    }

    /// Fills the server's table in its SQLite file (``TableServerSeed``). Returns the seconds it
    /// took.
    static func seed(path: String, rows: Int) throws -> Double {
        let start = monotonicSeconds()
        try TableServerSeed.seed(serverFile: path, table: table, rows: rows, id: id, data: fields)
        return monotonicSeconds() - start
    }
}

/// A row as Flatland's typed table declares it.
struct BenchTodo: TableEntity {
    static let prefix = "todo"
    var id: EntityID<BenchTodo>
    var text = ""
    var complete = false
    var priority = 0
    var dueAt = Date(timeIntervalSince1970: 0)
    var system = TableSystemProperties()

    init(id: EntityID<BenchTodo>) { self.id = id }

    static let fields: [Field<BenchTodo>] =
        [
            Field("text", \.text), Field("complete", \.complete), Field("priority", \.priority),
            Field("dueAt", \.dueAt),
        ] + systemFields
}

/// The same row as an SDK author declares it for `JSONDecoder` today.
struct CodableTodo: Codable, Sendable {
    var id: String
    var text: String
    var complete: Bool
    var priority: Int
    var dueAt: Date
    var createdAt: Date?  // v3 has none
    var updatedAt: Date
    var version: String
    var deleted: Bool

    /// A decoder for table rows: dates in ISO 8601 with fractional seconds, as the servers send
    /// them.
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = try? style.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "not an ISO 8601 date with fractional seconds: \(text)")
            }
            return date
        }
        return decoder
    }
}

/// A v3 (Datasync) page.
struct CodableDatasyncPage: Decodable {
    var items: [CodableTodo]
    var nextLink: String?
}
