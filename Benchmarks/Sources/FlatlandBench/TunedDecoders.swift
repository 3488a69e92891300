import FlatlandFixtures
import Foundation

/// "JSONDecoder, tuned": the same `Codable` models and tables as the fixtures' contender, decoded
/// the way a careful SDK author would: one `JSONDecoder` configured once and reused for every
/// response, one ISO 8601 parser reused for every date (the plain contender makes a new format
/// style per date, or lets `.iso8601` make one), and the tables' dictionaries sized once from the
/// response instead of grown insert by insert.
final class TunedDecoders {
    /// ISO 8601 with fractional seconds (the seed data's dates), made once.
    private static let fractionalDates = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    /// ISO 8601 without fractional seconds (GitHub's dates), made once.
    private static let wholeSecondDates = Date.ISO8601FormatStyle()

    private let seed = TunedDecoders.decoder(dates: TunedDecoders.fractionalDates)
    private let plain = JSONDecoder()
    private let github = TunedDecoders.decoder(dates: TunedDecoders.wholeSecondDates)

    private static func decoder(dates style: Date.ISO8601FormatStyle) -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { d in
            let container = try d.singleValueContainer()
            let text = try container.decode(String.self)
            do {
                return try style.parse(text)
            } catch {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "bad date")
            }
        }
        return decoder
    }

    /// The seed-shaped response into its tables.
    func seed(_ bytes: Data) throws -> SeedCodable.Tables {
        let response = try seed.decode(SeedCodable.Response.self, from: bytes)
        var tables = SeedCodable.Tables()
        let users = response.users.data
        tables.users.reserveCapacity(users.count + 1)
        tables.devices.reserveCapacity(users.reduce(1) { $0 + $1.devices.count })
        tables.friends.reserveCapacity(users.reduce(0) { $0 + $1.friends.count })
        tables.sessions.reserveCapacity(1)
        tables.insert(response)
        return tables
    }

    /// twitter.json into its tables.
    func twitter(_ bytes: Data) throws -> Twitter.Tables {
        let statuses = try plain.decode(Twitter.Response.self, from: bytes).statuses
        var tables = Twitter.Tables()
        tables.statuses.reserveCapacity(statuses.count * 2)
        tables.users.reserveCapacity(statuses.count * 2)
        for status in statuses { tables.insert(status) }
        return tables
    }

    /// github_events.json into its tables.
    func github(_ bytes: Data) throws -> GitHub.Tables {
        let events = try github.decode([GitHub.Event].self, from: bytes)
        var tables = GitHub.Tables()
        tables.events.reserveCapacity(events.count)
        tables.actors.reserveCapacity(events.count)
        tables.repos.reserveCapacity(events.count)
        tables.orgs.reserveCapacity(events.count)
        for event in events { tables.insert(event) }
        return tables
    }
}
