import Foundation
import NIOConcurrencyHelpers

/// What the server serves at `/tables/{name}`: the tables, where their rows live, which protocol
/// versions it speaks, and its page sizes.
public struct TableServing: Sendable {
    /// The tables (a free-form `todoitem` table with soft delete by default).
    public var tables: [TableDefinition]
    /// Where the rows live: SQLite (a file, or memory) or a PostgreSQL database.
    public var storage: Storage
    /// The SQLite file the rows live in; nil keeps them in memory (or, reading it, the rows
    /// are in PostgreSQL). Setting it chooses SQLite.
    public var databasePath: String? {
        get {
            if case .sqlite(let path) = storage { return path }
            return nil
        }
        set { storage = .sqlite(path: newValue) }
    }
    /// The protocol versions served at once, chosen per request by its `ZUMO-API-VERSION`
    /// (v2 and v3 by default; with v1, a request without one is served as v1).
    public var protocols: Set<TableProtocolVersion>
    /// Rows in a page, in every protocol: a query without `$top`, or with a larger one, gets
    /// this many rows and a link to the next page. Nil (the default): each protocol's own,
    /// ``defaultPageSize(_:)`` (100 in v3, as Datasync; 50 in v1 and v2, as the Node server).
    public var pageSize: Int?
    /// The largest `$top` accepted, in every protocol; more is a 400. Nil (the default): each
    /// protocol's own, ``defaultMaxTop(_:)`` (128,000 in v3, as Datasync; 1,000 in v1 and v2).
    public var maxTop: Int?
    /// The server's address as its clients reach it (`https://api.example.com`, or with a path
    /// prefix behind a proxy), on which `Location` and v1/v2 `Link` headers are built. Nil (the
    /// default): the address the server listens on. Never the request's `Host` or
    /// `X-Forwarded-*` headers, which any client sets.
    public var publicURL: String?
    /// The largest request body a table route reads, in bytes (1 MiB by default): a larger one
    /// is a 413 and changes nothing.
    public var maxBodyBytes: Int

    /// How long the server remembers a write's `Idempotency-Key` and its answer, to answer a
    /// replay of the write with it (one day by default): see <doc:ServingTables>.
    public var idempotencyTTL: Duration = TableServing.defaultIdempotencyTTL

    /// Behaviours of a legal server this one does not have by default, for tests of clients
    /// (FlatlandServerTesting): a coarse clock, ties in a random order.
    package var quirks = TableServingQuirks()

    /// The default ``idempotencyTTL``: 86,400 seconds.
    public static let defaultIdempotencyTTL: Duration = .seconds(86_400)

    /// The default ``maxBodyBytes``: 1 MiB.
    public static let defaultMaxBodyBytes = 1 << 20

    /// A configuration; every argument has a default. `storage`, when given, wins over
    /// `databasePath`.
    public init(
        tables: [TableDefinition] = [TableDefinition(name: "todoitem")], databasePath: String? = nil,
        storage: Storage? = nil, protocols: Set<TableProtocolVersion> = [.v2, .v3], pageSize: Int? = nil,
        maxTop: Int? = nil, maxBodyBytes: Int = TableServing.defaultMaxBodyBytes, publicURL: String? = nil
    ) {
        self.tables = tables
        self.storage = storage ?? .sqlite(path: databasePath)
        self.protocols = protocols
        self.pageSize = pageSize
        self.maxTop = maxTop
        self.maxBodyBytes = maxBodyBytes
        self.publicURL = publicURL
    }

    /// A protocol's page size when ``pageSize`` is nil: 100 in v3 (Datasync's
    /// `TableControllerOptions.PageSize`), 50 in v1 and v2 (the Node and .NET servers').
    public static func defaultPageSize(_ version: TableProtocolVersion) -> Int { version == .v3 ? 100 : 50 }

    /// A protocol's largest `$top` when ``maxTop`` is nil: 128,000 in v3 (the Datasync
    /// server's `MaxTop`), 1,000 in v1 and v2 (the Node server's `maxTop`).
    public static func defaultMaxTop(_ version: TableProtocolVersion) -> Int { version == .v3 ? 128_000 : 1000 }

    /// `url` as a ``publicURL`` (`http://` or `https://`, a host, an optional port and path; no
    /// query or fragment), without a trailing `/`; nil when it is not one.
    public static func publicURL(_ url: String) -> String? {
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = parsed.host, !host.isEmpty, parsed.query == nil,
            parsed.fragment == nil, parsed.user == nil,
            url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x3C && $0 != 0x3E && $0 != 0x22 })
        else { return nil }
        var text = url
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}

extension TableServing {
    /// Where the table server keeps its rows, chosen at start.
    public enum Storage: Sendable, Hashable {
        /// SQLite, embedded: in this file, or in memory when `path` is nil. One server per file.
        case sqlite(path: String?)
        /// A PostgreSQL database, shared by every server instance given the same URL:
        /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (or `postgresql://`), with
        /// `?schema=NAME` to keep the tables in a schema other than `public` (and `sslmode=disable`
        /// accepted; connections are not encrypted). The server creates and migrates its
        /// tables there when it starts.
        case postgres(url: String)

        /// The storage `--tables-db` names: a `postgres://` or `postgresql://` URL picks
        /// PostgreSQL, anything else is an SQLite file path.
        public init(_ location: String) {
            self = PostgresLocation.isURL(location) ? .postgres(url: location) : .sqlite(path: location)
        }
    }
}

/// Why the table server could not open its storage when it started.
public struct TableServingError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: Sendable, Hashable {
        /// The PostgreSQL URL cannot be understood.
        case badDatabaseURL
        /// The database cannot be opened or reached, or its tables cannot be created.
        case databaseFailed
    }

    /// What went wrong.
    public var code: Code
    /// What went wrong, and where (the file, or the database without its password).
    public var message: String

    public var description: String { message }
}

/// A table route's answer, and what an injected fault does to it on the wire.
struct TableAnswer {
    var reply: SampleAPI.Reply
    /// Close the connection instead of answering (the request was served).
    var loseResponse = false
    /// Close the connection after this many bytes of the body.
    var dropAfter: Int?
}

/// The table routes of a running server: set when it starts, once their storage is open.
final class TableHost: Sendable {
    private let current = NIOLockedValueBox<TableAPI?>(nil)
    /// Where tests inject faults.
    let hooks: ServerHooks

    init(hooks: ServerHooks) { self.hooks = hooks }

    private let listeningAddress = NIOLockedValueBox<String?>(nil)

    var api: TableAPI? { current.withLockedValue { $0 } }

    /// Records the address the server listens on: links are built on it when no public URL is
    /// configured.
    func listening(host: String, port: Int) {
        let shown = host.contains(":") ? "[\(host)]" : host
        listeningAddress.withLockedValue { $0 = "http://\(shown):\(port)" }
    }

    /// What `Location` and next links are built on: the public URL, else the listening address.
    var baseURL: String {
        api?.configuration.publicURL ?? listeningAddress.withLockedValue { $0 } ?? "http://127.0.0.1"
    }

    /// Whether `path` is one of the table routes' (`/tables`, `/tables/…`).
    static func isTablePath(_ path: String) -> Bool { path == "/tables" || path.hasPrefix("/tables/") }

    /// The largest body a table route reads.
    var maxBodyBytes: Int { api?.configuration.maxBodyBytes ?? TableServing.defaultMaxBodyBytes }

    /// The answer to a request whose path is a table route's, with the fault injected into it if
    /// any; nil for any other path, or before the tables are open.
    func respond(
        method: String, path: String, query: [String: String], rawQuery: String? = nil, headers: [String: String],
        body: [UInt8], authenticate: (String) -> SampleAPI.Caller
    ) async -> TableAnswer? {
        guard let api, Self.isTablePath(path) else { return nil }
        let faults = hooks.table
        let fault = faults?.take(method: method, path: path, naming: path.hasPrefix("/tables/$") ? "/tables/$" : nil)
        switch fault {
        case .fail(let status, let retryAfter):
            var reply = TableAPI.error(status, "injected failure")
            if let retryAfter { reply.headers.append(("Retry-After", retryAfter)) }
            return TableAnswer(reply: reply)
        case .delay(let duration):
            try? await Task.sleep(for: duration)
        case .loseResponse, .dropMidBody, nil:
            break
        }
        guard
            let reply = await api.respond(
                method: method, path: path, query: query, rawQuery: rawQuery, headers: headers, body: body,
                baseURL: baseURL, authenticate: authenticate, faults: faults)
        else { return nil }
        var answer = TableAnswer(reply: reply)
        if let index = reply.headers.firstIndex(where: { $0.0 == TableAPI.loseResponseMarker }) {
            // An operation of a batch took a lost response: the batch's answer is lost.
            answer.reply.headers.remove(at: index)
            answer.loseResponse = true
        }
        switch fault {
        case .loseResponse:
            answer.loseResponse = true
        case .dropMidBody(let afterBytes) where reply.body.count > 1:
            let cut = min(max(1, afterBytes ?? reply.body.count / 2), reply.body.count - 1)
            answer.reply.headers.append(("Content-Length", "\(reply.body.count)"))
            answer.dropAfter = cut
        default:
            break
        }
        return answer
    }

    /// Opens the storage, creates the tables, and serves them.
    ///
    /// - Throws: ``TableServingError``.
    func open(_ serving: TableServing) async throws(TableServingError) {
        guard api == nil else { return }
        let storage: any TableStorage
        do {
            switch serving.storage {
            case .sqlite(let path):
                storage = try SQLiteTableStorage(
                    path: path, now: serving.quirks.clock ?? SQLiteTableStorage.wallClock,
                    strictlyIncreasing: serving.quirks.clock == nil)
            case .postgres(let url): storage = try PostgresTableStorage(url: url)
            }
        } catch {
            throw TableServingError(
                code: error.code == .badQuery ? .badDatabaseURL : .databaseFailed, message: error.message)
        }
        do { try await storage.prepare(serving.tables) } catch {
            throw TableServingError(code: .databaseFailed, message: error.message)
        }
        let configuration = TableAPI.Configuration(
            tables: serving.tables, protocols: serving.protocols, pageSize: serving.pageSize, maxTop: serving.maxTop,
            maxBodyBytes: serving.maxBodyBytes, idempotencyTTL: serving.idempotencyTTL,
            publicURL: serving.publicURL.flatMap(TableServing.publicURL), shuffledTies: serving.quirks.shuffledTies)
        current.withLockedValue { $0 = TableAPI(storage: storage, configuration: configuration) }
    }
}

/// Behaviours the protocol allows a server and that real ones have, which this server does not
/// have unless a test asks (FlatlandServerTesting): clients must get every row once all the same.
package struct TableServingQuirks: Sendable {
    /// The clock `updatedAt` is read from, in microseconds since 1970, when a test gives one: a
    /// coarse clock (``coarseClock(_:)``, or one the test moves on itself), whose ties stay ties
    /// (a row written later in the same tick gets the same `updatedAt`; it never goes back). Nil:
    /// the wall clock, moved on by a microsecond at least with every write. SQLite storage only.
    package var clock: (@Sendable () -> Int64)?
    /// Rows tied on every term of `$orderby` come back in a random order, drawn anew for each
    /// request (rather than by id). A query ordered by `id` has no ties.
    package var shuffledTies = false

    package init(clock: (@Sendable () -> Int64)? = nil, shuffledTies: Bool = false) {
        self.clock = clock
        self.shuffledTies = shuffledTies
    }

    /// The wall clock truncated to `tick` microseconds.
    package static func coarseClock(_ tick: Int64) -> @Sendable () -> Int64 {
        SQLiteTableStorage.coarseClock(tick)
    }
}
