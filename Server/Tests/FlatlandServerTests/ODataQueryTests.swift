import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// The `$filter`s the Datasync server accepts, run on both storages against a movie-like data set
/// generated here, each checked against the same predicate evaluated in Swift (the semantics the
/// Datasync server documents: OData v4 operators and functions over .NET values).
@Suite struct ODataQueryTests {
    /// One generated movie, as the test knows it.
    struct Movie: Sendable {
        var id: String
        var title: String
        var year: Int
        var duration: Int
        var rating: String
        var releaseDate: String
        var bestPictureWinner: Bool
        /// A time of day, `HH:mm:ss`.
        var showtime: String
        /// An instant, ISO 8601 with an offset.
        var seen: String
        var seenMillis: Int64
        var score: Double
        var ref: String
        var note: String?
        var padded: String

        var json: String {
            var object: [String] = [
                #""title":"\#(title)""#, #""year":\#(year)"#, #""duration":\#(duration)"#, #""rating":"\#(rating)""#,
                #""releaseDate":"\#(releaseDate)""#, #""bestPictureWinner":\#(bestPictureWinner)"#,
                #""showtime":"\#(showtime)""#, #""seen":"\#(seen)""#, #""score":\#(score)"#, #""ref":"\#(ref)""#,
                #""padded":"\#(padded)""#,
            ]
            if let note { object.append(#""note":"\#(note)""#) }
            if note == nil, year % 11 == 0 { object.append(#""note":null"#) }
            return "{" + object.joined(separator: ",") + "}"
        }
    }

    static let ratings = ["Unrated", "G", "PG", "PG13", "R", "NC17"]
    static let words = ["The", "Dark", "Knight", "river", "Hunter", "an", "Lost", "Ranger", "the", "Silent", "Water"]

    /// 80 movies from a fixed seed.
    static let movies: [Movie] = {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return (0..<80).map { k in
            let year = 1920 + next(101)
            let month = 1 + next(12)
            let day = k % 9 == 0 ? 1 : 1 + next(28)
            let title = (0..<(1 + next(4))).map { _ in words[next(words.count)] }.joined(separator: " ")
            let (hour, minute, second) = (next(24), [0, 14, 21, 30, 45][next(5)], k % 3 == 0 ? 0 : next(60))
            let seenDay = 1 + next(28)
            let millis = next(1000)
            // Some instants are written with an offset: the same instant, other written parts.
            let offset = k % 7 == 0 ? "+02:00" : "Z"
            let seenHour = hour
            let base =
                "2020-\(two(1 + k % 12))-\(two(seenDay))T\(two(seenHour)):04:05.\(String(1000 + millis).dropFirst())"
            var utc = DateComponents(
                calendar: Calendar(identifier: .gregorian), timeZone: TimeZone(identifier: "UTC"), year: 2020,
                month: 1 + k % 12, day: seenDay, hour: seenHour, minute: 4, second: 5)
            utc.nanosecond = 0
            let utcMillis = Int64(utc.date!.timeIntervalSince1970) * 1000 + Int64(millis)
            return Movie(
                id: "id-" + String(1000 + k).dropFirst(),
                title: title, year: year, duration: 60 + next(140), rating: ratings[next(ratings.count)],
                releaseDate: "\(year)-\(two(month))-\(two(day))", bestPictureWinner: next(5) == 0,
                showtime: "\(two(hour)):\(two(minute)):\(two(second))", seen: base + offset,
                seenMillis: offset == "Z" ? utcMillis : utcMillis - 2 * 3_600_000,
                score: Double(next(100)) / 4, ref: UUID().uuidString.lowercased(), note: k % 4 == 0 ? "n\(k % 3)" : nil,
                padded: k % 2 == 0 ? "  x  " : "y")
        }
    }()

    /// The movies' fields, declared.
    static let schema = TableSchema(fields: [
        .init("title", .string), .init("year", .int, indexed: true), .init("duration", .int),
        .init("rating", .enumeration(ratings)), .init("releaseDate", .date, indexed: true),
        .init("bestPictureWinner", .bool), .init("showtime", .time), .init("seen", .datetime, indexed: true),
        .init("score", .double), .init("ref", .guid), .init("note", .string, nullable: true), .init("padded", .string),
    ])

    /// A fresh table of the movies on `kind`: free-form, or `declared` with ``schema``.
    static func storage(_ kind: TestStorage, declared: Bool = false) async throws -> any TableStorage {
        let storage = try await kind.make([TableDefinition(name: "movies", schema: declared ? schema : nil)])
        for movie in movies {
            guard case .object(let fields) = try JSONValue(parsing: movie.json) else { throw CancellationError() }
            _ = try await storage.insert("movies", id: movie.id, fields: fields)
        }
        return storage
    }

    static func ids(_ storage: any TableStorage, _ filter: String, orderBy: [(String, Bool)] = []) async throws
        -> [String]
    {
        var query = TableRowQuery(filter: try ODataFilter.parse(filter), top: 1000)
        query.orderBy = orderBy.map { (field: $0.0, descending: $0.1) }
        return try await storage.query("movies", query, wire: .v3).rows.map(\.id)
    }

    struct Case: Sendable {
        /// The tables a case holds for: its semantics differ where a field is typed (a
        /// `datetime` reads its parts in UTC, an enumeration compares by position).
        enum Tables: Sendable { case both, freeForm, declared }
        var filter: String
        var tables: Tables
        var matches: @Sendable (Movie) -> Bool
        init(_ filter: String, _ tables: Tables = .both, _ matches: @escaping @Sendable (Movie) -> Bool) {
            self.filter = filter
            self.tables = tables
            self.matches = matches
        }
    }

    static func year(_ text: String) -> Int { Int(text.prefix(4))! }
    static func part(_ text: String, _ from: Int, _ length: Int) -> Int {
        Int(text.dropFirst(from).prefix(length))!
    }
    static func round(_ x: Double) -> Double { x.rounded(.toNearestOrAwayFromZero) }
    static let aRef = movies[5].ref
    static let aDate = movies[3].releaseDate
    static let aTime = movies[4].showtime

    static let cases: [Case] = [
        // Comparisons and logic.
        Case("year eq 1994") { $0.year == 1994 },
        Case("year ne 1994") { $0.year != 1994 },
        Case("year gt 1999") { $0.year > 1999 },
        Case("year ge 2000 and year le 2009") { $0.year >= 2000 && $0.year <= 2009 },
        Case("year lt 1950 or year gt 2010") { $0.year < 1950 || $0.year > 2010 },
        Case("(year ge 1930 and year le 1940) or (year ge 1950 and year le 1960)") {
            ($0.year >= 1930 && $0.year <= 1940) || ($0.year >= 1950 && $0.year <= 1960)
        },
        Case("not (year lt 2000)") { !($0.year < 2000) },
        Case("bestPictureWinner") { $0.bestPictureWinner },
        Case("bestPictureWinner eq true") { $0.bestPictureWinner },
        Case("bestPictureWinner ne true") { !$0.bestPictureWinner },
        Case("not(bestPictureWinner eq false)") { $0.bestPictureWinner },
        Case("not bestPictureWinner") { !$0.bestPictureWinner },
        Case("rating eq 'R'") { $0.rating == "R" },
        Case("rating ne 'PG13'") { $0.rating != "PG13" },
        Case("rating gt 'P'", .freeForm) { $0.rating > "P" },
        Case("rating gt 'PG'", .declared) { ratings.firstIndex(of: $0.rating)! > 2 },
        Case("rating le 'G' or rating eq 'NC17'", .declared) { ["Unrated", "G", "NC17"].contains($0.rating) },
        // Arithmetic: .NET's integer division for two integers, exact otherwise.
        Case("(year sub 1900) ge 80") { $0.year - 1900 >= 80 },
        Case("((year sub 1900) ge 80) and ((year add 10) le 2000) and (duration le 120)") {
            $0.year - 1900 >= 80 && $0.year + 10 <= 2000 && $0.duration <= 120
        },
        Case("(year div 1000.5) eq 2") { Double($0.year) / 1000.5 == 2 },
        Case("duration div 60 eq 2") { $0.duration / 60 == 2 },
        Case("duration div 60.0 gt 2") { Double($0.duration) / 60 > 2 },
        Case("duration mod 7 eq 3") { $0.duration % 7 == 3 },
        Case("year mul 2 gt 3980") { $0.year * 2 > 3980 },
        Case("-duration lt -150") { -$0.duration < -150 },
        Case("duration add year sub 2000 gt 100") { $0.duration + $0.year - 2000 > 100 },
        Case("duration div 0 eq 1") { _ in false },
        Case("round(duration div 60.0) eq 2") { round(Double($0.duration) / 60) == 2 },
        Case("floor(duration div 60.0) eq 2") { (Double($0.duration) / 60).rounded(.down) == 2 },
        Case("ceiling(duration div 60.0) eq 2") { (Double($0.duration) / 60).rounded(.up) == 2 },
        Case("bestPictureWinner eq true and round(duration div 60.0) eq 2") {
            $0.bestPictureWinner && round(Double($0.duration) / 60) == 2
        },
        // Numbers of every kind.
        Case("score gt 7.5m") { $0.score > 7.5 },
        Case("score le 8.25") { $0.score <= 8.25 },
        Case("score eq 7.5d") { $0.score == 7.5 },
        Case("score ge 1.2e1") { $0.score >= 12 },
        Case("score lt 3L") { $0.score < 3 },
        // Text.
        Case("startswith(tolower(title), 'the')") { $0.title.lowercased().hasPrefix("the") },
        Case("startswith(toupper(title), 'THE')") { $0.title.uppercased().hasPrefix("THE") },
        Case("endswith(title, 'er')") { $0.title.hasSuffix("er") },
        Case("contains(title, 'an')") { $0.title.contains("an") },
        Case("substringof('an', title)") { $0.title.contains("an") },
        Case("substringof('Dark', title) eq true") { $0.title.contains("Dark") },
        Case("contains(title, 'Dark') eq false") { !$0.title.contains("Dark") },
        Case("length(title) gt 10") { $0.title.count > 10 },
        Case("indexof(title, 'a') eq 1") { Array($0.title).firstIndex(of: "a") == 1 },
        Case("indexof(title, 'zzz') eq -1") { _ in true },
        Case("substring(title, 1, 3) eq 'he '") { String($0.title.dropFirst(1).prefix(3)) == "he " },
        Case("substring(title, 4) eq 'Dark'") { String($0.title.dropFirst(4)) == "Dark" },
        Case("tolower(title) eq 'the dark'") { $0.title.lowercased() == "the dark" },
        Case("trim(padded) eq 'x'") { $0.padded.trimmingCharacters(in: .whitespaces) == "x" },
        Case("concat(rating, 'x') eq 'Rx'") { $0.rating + "x" == "Rx" },
        Case("concat(concat(rating, '-'), title) eq 'R-The'") { $0.rating + "-" + $0.title == "R-The" },
        Case("title eq 'it''s'") { $0.title == "it's" },
        // Lists.
        Case("rating in ('R', 'G')") { ["R", "G"].contains($0.rating) },
        Case("year in (1994, 2001, 1950)") { [1994, 2001, 1950].contains($0.year) },
        Case("id in ( 'id-001', 'id-003', 'id-999' )") { ["id-001", "id-003"].contains($0.id) },
        Case("not (rating in ('R'))") { $0.rating != "R" },
        // Dates (yyyy-MM-dd), times of day and instants in free-form fields.
        Case("releaseDate eq cast(\(aDate),Edm.Date)") { $0.releaseDate == aDate },
        Case("releaseDate ge cast(1999-12-31,Edm.Date)") { $0.releaseDate >= "1999-12-31" },
        Case("releaseDate lt 2000-01-01") { $0.releaseDate < "2000-01-01" },
        Case("year(releaseDate) eq year") { _ in true },
        Case("month(releaseDate) eq 11") { part($0.releaseDate, 5, 2) == 11 },
        Case("day(releaseDate) eq 1") { part($0.releaseDate, 8, 2) == 1 },
        Case("year(releaseDate) lt 1950") { year($0.releaseDate) < 1950 },
        Case("showtime eq \(aTime)") { $0.showtime == aTime },
        Case("showtime ge cast(12:15:00,Edm.TimeOfDay)") { $0.showtime >= "12:15:00" },
        Case("showtime lt 07:14") { $0.showtime < "07:14:00" },
        Case("hour(showtime) eq 3") { part($0.showtime, 0, 2) == 3 },
        Case("minute(showtime) eq 21") { part($0.showtime, 3, 2) == 21 },
        Case("second(showtime) eq 0") { part($0.showtime, 6, 2) == 0 },
        Case("hour(seen) le 12", .freeForm) { part($0.seen, 11, 2) <= 12 },
        Case("hour(seen) le 12", .declared) { ($0.seenMillis / 3_600_000) % 24 <= 12 },
        Case("minute(seen) eq 4 and second(seen) eq 5") { _ in true },
        Case("month(seen) eq 3", .freeForm) { part($0.seen, 5, 2) == 3 },
        Case("date(seen) eq 2020-03-05", .freeForm) { $0.seen.hasPrefix("2020-03-05") },
        Case("time(seen) ge 12:00:00", .freeForm) { String($0.seen.dropFirst(11).prefix(8)) >= "12:00:00" },
        Case("time(seen) ge 12:00:00", .declared) { ($0.seenMillis / 3_600_000) % 24 >= 12 },
        Case("seen gt cast(2020-06-01T00:00:00Z,Edm.DateTimeOffset)") { $0.seenMillis > 1_590_969_600_000 },
        Case("seen le datetimeoffset'2020-06-01T02:00:00+02:00'") { $0.seenMillis <= 1_590_969_600_000 },
        Case("seen lt 2020-03-01T00:00:00.000Z") { $0.seenMillis < 1_583_020_800_000 },
        Case("seen ge datetime'2020-10-01T00:00:00'") { $0.seenMillis >= 1_601_510_400_000 },
        Case("seen eq cast(\(movies[2].seen),Edm.DateTimeOffset)") { $0.seenMillis == movies[2].seenMillis },
        // System properties.
        Case("updatedAt gt cast(1970-01-01T00:00:00Z,Edm.DateTimeOffset)") { _ in true },
        Case("updatedAt ge 2000-01-01") { _ in true },
        Case("updatedAt le now()") { _ in true },
        Case("updatedAt gt now()") { _ in false },
        Case("year(updatedAt) ge 2024 and month(updatedAt) ge 1 and day(updatedAt) ge 1") { _ in true },
        Case("hour(updatedAt) ge 0 and minute(updatedAt) lt 60 and second(updatedAt) lt 60") { _ in true },
        Case("date(updatedAt) gt 2000-01-01") { _ in true },
        Case("deleted eq false") { _ in true },
        Case("version ne null") { _ in true },
        // Nulls and missing fields.
        Case("note eq null") { $0.note == nil },
        Case("note ne null") { $0.note != nil },
        Case("note ne 'n1'") { $0.note != "n1" },
        Case("not (note eq 'n1')") { $0.note != "n1" },
        // GUIDs.
        Case("ref eq \(aRef)") { $0.ref == aRef },
        Case("ref eq guid'\(aRef.uppercased())'") { $0.ref == aRef },
        Case("ref eq cast(\(aRef),Edm.Guid)") { $0.ref == aRef },
        // Long filters: flat chains of hundreds of terms.
        Case((0..<300).map { "id eq 'id-\(String(1000 + $0 * 3).dropFirst())'" }.joined(separator: " or ")) {
            Int($0.id.dropFirst(3))! % 3 == 0
        },
        Case((0..<500).map { "year ne \($0 + 1000)" }.joined(separator: " and ")) { _ in true },
        Case("year in (" + (1900..<2100).map { "\($0)" }.joined(separator: ",") + ")") { _ in true },
    ]

    /// Each case on one table of the movies, free-form or declared (one table for all the
    /// cases: each is a read).
    @Test(arguments: TestStorage.all, [false, true])
    func selectsWhatDatasyncSelects(_ kind: TestStorage, declared: Bool) async throws {
        let storage = try await Self.storage(kind, declared: declared)
        var ran = 0
        for c in Self.cases where c.tables == .both || (c.tables == .declared) == declared {
            let expected = Self.movies.filter(c.matches).map(\.id)
            do {
                let read = try await Self.ids(storage, c.filter)
                #expect(read == expected, "\(c.filter.prefix(200))")
            } catch {
                Issue.record("\(c.filter.prefix(200)): \(error)")
            }
            ran += 1
        }
        #expect(ran > 90)
    }

    @Test(arguments: TestStorage.all, [false, true])
    func ordersByManyKeysWithTheIdLast(_ kind: TestStorage, declared: Bool) async throws {
        let storage = try await Self.storage(kind, declared: declared)
        let byYearDescTitle = Self.movies.sorted {
            $0.year != $1.year ? $0.year > $1.year : $0.title != $1.title ? $0.title < $1.title : $0.id < $1.id
        }
        .map(\.id)
        #expect(
            try await Self.ids(storage, "year gt 0", orderBy: [("year", true), ("title", false)]) == byYearDescTitle)
        let byWinnerDesc = Self.movies.sorted {
            $0.bestPictureWinner != $1.bestPictureWinner ? $0.bestPictureWinner : $0.id < $1.id
        }
        .map(\.id)
        #expect(try await Self.ids(storage, "year gt 0", orderBy: [("bestPictureWinner", true)]) == byWinnerDesc)
        let byReleaseDate = Self.movies.sorted { ($0.releaseDate, $0.id) < ($1.releaseDate, $1.id) }.map(\.id)
        #expect(try await Self.ids(storage, "year gt 0", orderBy: [("releaseDate", false)]) == byReleaseDate)
        // `id` ends the order, even when asked for first (the terms after it change nothing).
        let byIdDesc = Self.movies.map(\.id).sorted(by: >)
        #expect(try await Self.ids(storage, "year gt 0", orderBy: [("id", true), ("year", false)]) == byIdDesc)
        // A declared enumeration orders by its names' positions; a free-form one by its text.
        let position = { (m: Movie) in declared ? Self.ratings.firstIndex(of: m.rating)! : 0 }
        let byRating = Self.movies.sorted {
            (position($0), $0.rating, $0.id) < (position($1), $1.rating, $1.id)
        }
        .map(\.id)
        #expect(try await Self.ids(storage, "year gt 0", orderBy: [("rating", false)]) == byRating)
    }
}
