import ArgumentParser
import FlatlandServer
import Foundation

/// `flatland serve`: the sample backend of the seed's API on loopback.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the sample backend of the seed's API (users, devices, sessions) until Ctrl-C.",
        discussion: """
            Starts with a seeded sample population, so a fresh server answers at once:
            curl 'http://127.0.0.1:8080/devices?offset=0&count=2'
            Emails and push tokens are shown only to their owner; writes to a user need that user's
            token (POST /session registers one, PUT /session confirms it). Timeouts, the connection
            cap and the bound on unconfirmed registrations keep it alive under hostile clients.
            Beside it, the table protocol (Azure Mobile Apps v2, Datasync v3, Mobile Services v1 when
            asked) at /tables/{name}: curl -H 'ZUMO-API-VERSION: 2.0.0' http://127.0.0.1:8080/tables/todoitem
            """
    )

    @OptionGroup var logging: LogLevelOption

    @Option(help: "The port (0 picks a free one).")
    var port = 8080

    @Option(help: "The address to bind (loopback by default).")
    var host = "127.0.0.1"

    @Option(help: "How many users the sample population has (each with two devices).")
    var users = 24

    @Option(help: "The population's seed.")
    var seed: UInt64 = 0x5EED

    @Option(help: "Seconds a request's head may take once its first byte has arrived.")
    var headerTimeout = 10.0

    @Option(
        help: "Seconds a connection may stay idle (no request in progress, nothing left to write, nothing received).")
    var idleTimeout = 60.0

    @Option(help: "Seconds a request's body may take to arrive once its head has, however it trickles in.")
    var bodyTimeout = 30.0

    @Option(help: "Seconds a response may wait for a client that stops reading it before the connection is closed.")
    var writeTimeout = 30.0

    @Option(help: "The most connections open at once; past it new ones are closed.")
    var maxConnections = 512

    @Option(help: "The most registrations (POST /session) waiting for their PUT /session.")
    var maxPendingSessions = 1000

    @Option(help: "Seconds a registration may wait for its PUT /session before it expires.")
    var pendingSessionLifetime = 600.0

    @Option(
        help: """
            The tables served at /tables/{name}, comma-separated (free-form JSON rows, soft delete), each \
            NAME or NAME:ACCESS with ACCESS anonymous (the default), authenticated or per-user \
            (e.g. todoitem,notes:authenticated,diary:per-user).
            """)
    var tables = "todoitem"

    @Option(help: "The largest request body a table route reads, in bytes; a larger one is a 413.")
    var tablesMaxBody = TableServing.defaultMaxBodyBytes

    @Option(
        help: "Seconds the server remembers a table write's Idempotency-Key and its answer (a replay gets that answer)."
    )
    var tablesIdempotencyTtl: Double = 86_400

    @Option(
        help: """
            Where the tables' rows live: an SQLite file (in memory when absent), or a PostgreSQL database \
            shared by several servers, postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME] \
            (or postgresql://). A bad URL or an unreachable database stops the start with 'error: …' (exit 1).
            """)
    var tablesDb: String?

    @Option(help: "The table protocol versions served at once, comma-separated: v1, v2, v3.")
    var tableProtocols = "v2,v3"

    @Option(
        help: """
            A JSON file declaring tables' fields and types (see the README): each table it names is served \
            (with its --tables access, if listed there) and keeps its fields in typed columns.
            """)
    var tableSchemas: String?

    /// The tables `--table-schemas` declares, in the file's order (empty without the option).
    func declaredTables() throws -> [(name: String, declaration: TableSchema.Declaration)] {
        guard let tableSchemas else { return [] }
        guard let data = FileManager.default.contents(atPath: tableSchemas) else {
            throw ValidationError("--table-schemas: cannot read '\(tableSchemas)'")
        }
        do {
            return try TableSchema.parseFile(Array(data))
        } catch {
            throw ValidationError("--table-schemas: \(error.message)")
        }
    }

    @Option(
        help: """
            Rows in a page of a table query, in every protocol (a larger $top gets a page and a next link);             by default 100 in v3 (Datasync) and 50 in v1 and v2.
            """)
    var tablesPageSize: Int?

    @Option(
        help: """
            The largest $top a table query may ask for, in every protocol (more is a 400); by default 128000             in v3 and 1000 in v1 and v2.
            """)
    var tablesMaxTop: Int?

    @Option(
        help: """
            The server's address as clients reach it (http[s]://HOST[:PORT][/PATH]): Location and Link headers             are built on it. By default the address the server listens on; never the request's Host header.
            """)
    var publicURL: String?

    /// The tables `--tables` gives: `NAME` or `NAME:ACCESS`, in order.
    var tableSpecs: [(name: String, access: String?)] {
        tables.split(separator: ",", omittingEmptySubsequences: false).map { item in
            let parts = item.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            return (
                parts[0].trimmingCharacters(in: .whitespaces),
                parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : nil
            )
        }
    }

    /// The table names `--tables` gives.
    var tableNames: [String] { tableSpecs.map(\.name) }

    /// The access level an `ACCESS` word names, or nil when it names none.
    static func access(_ word: String) -> TableAccess? {
        switch word.lowercased() {
        case "anonymous": .anonymous
        case "authenticated": .authenticated
        case "per-user", "peruser": .perUser
        default: nil
        }
    }

    /// The tables `--tables` and `--table-schemas` declare (valid once ``validate()`` passed).
    var tableDefinitions: [TableDefinition] {
        let declared = (try? declaredTables()) ?? []
        var tables = tableSpecs.map { spec in
            var table = TableDefinition(name: spec.name, access: spec.access.flatMap(Self.access) ?? .anonymous)
            if let declaration = declared.first(where: { $0.name.lowercased() == spec.name.lowercased() })?.declaration
            {
                table.schema = declaration.schema
                table.softDelete = declaration.softDelete
            }
            return table
        }
        for (name, declaration) in declared where !tables.contains(where: { $0.name.lowercased() == name.lowercased() })
        {
            tables.append(TableDefinition(name: name, softDelete: declaration.softDelete, schema: declaration.schema))
        }
        return tables
    }

    /// The versions `--table-protocols` gives, or nil when one is unknown.
    var protocolVersions: Set<TableProtocolVersion>? {
        var versions = Set<TableProtocolVersion>()
        for word in tableProtocols.split(separator: ",") {
            guard let version = TableProtocolVersion(rawValue: word.trimmingCharacters(in: .whitespaces).lowercased())
            else { return nil }
            versions.insert(version)
        }
        return versions.isEmpty ? nil : versions
    }

    func validate() throws {
        for (name, seconds) in [
            ("--header-timeout", headerTimeout), ("--idle-timeout", idleTimeout), ("--body-timeout", bodyTimeout),
            ("--write-timeout", writeTimeout), ("--pending-session-lifetime", pendingSessionLifetime),
        ] where !(seconds > 0 && seconds <= 86_400 * 365) {
            throw ValidationError("\(name) must be a number of seconds above 0 (at most a year)")
        }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
        guard maxPendingSessions > 0 else {
            throw ValidationError("--max-pending-sessions must be positive")
        }
        guard users >= 0 else { throw ValidationError("--users must not be negative") }
        guard !tableNames.isEmpty else { throw ValidationError("--tables needs at least one table name") }
        for name in tableNames where !TableDefinition.isValidName(name) {
            throw ValidationError("--tables: '\(name)' is not a table name (1 to 64 letters, digits, _ or -)")
        }
        for spec in tableSpecs {
            if let word = spec.access, Self.access(word) == nil {
                throw ValidationError(
                    "--tables: '\(word)' (for \(spec.name)) is not an access level: anonymous, authenticated or per-user"
                )
            }
        }
        guard tablesMaxBody > 0 else { throw ValidationError("--tables-max-body must be a positive number of bytes") }
        guard tablesIdempotencyTtl > 0, tablesIdempotencyTtl.isFinite else {
            throw ValidationError("--tables-idempotency-ttl must be a positive number of seconds")
        }
        guard Set(tableNames.map { $0.lowercased() }).count == tableNames.count else {
            throw ValidationError("--tables names a table twice")
        }
        _ = try declaredTables()
        if let tablesPageSize, tablesPageSize < 1 {
            throw ValidationError("--tables-page-size must be at least 1")
        }
        if let tablesMaxTop, tablesMaxTop < 1 { throw ValidationError("--tables-max-top must be at least 1") }
        if let publicURL, TableServing.publicURL(publicURL) == nil {
            throw ValidationError(
                "--public-url: '\(publicURL)' is not http[s]://HOST[:PORT][/PATH] (no query, fragment or user)")
        }
        guard protocolVersions != nil else {
            throw ValidationError("--table-protocols takes a comma list of v1, v2 and v3, not '\(tableProtocols)'")
        }
    }

    func run() async throws {
        let limits = SampleServer.Limits(
            headerTimeout: .milliseconds(Int64(headerTimeout * 1000)),
            idleTimeout: .milliseconds(Int64(idleTimeout * 1000)), maxConnections: maxConnections,
            maxPendingSessions: maxPendingSessions,
            pendingSessionLifetime: .milliseconds(Int64(pendingSessionLifetime * 1000)),
            bodyTimeout: .milliseconds(Int64(bodyTimeout * 1000)),
            writeTimeout: .milliseconds(Int64(writeTimeout * 1000)))
        var tableServing = TableServing(
            tables: tableDefinitions, storage: tablesDb.map(TableServing.Storage.init),
            protocols: protocolVersions ?? [.v2, .v3], pageSize: tablesPageSize, maxTop: tablesMaxTop,
            maxBodyBytes: tablesMaxBody, publicURL: publicURL)
        tableServing.idempotencyTTL = .milliseconds(Int64((tablesIdempotencyTtl * 1000).rounded()))
        var configuration = SampleServer.Configuration(
            host: host, port: port, population: .init(users: users, seed: seed), limits: limits,
            tables: tableServing)
        if let logger = logging.logger("flatland.server") { configuration.logger = logger }
        let server = SampleServer(configuration: configuration)
        let counts = "\(server.state.userIDs.count) users, \(server.state.deviceIDs.count) devices"
        let host = self.host
        do {
            try await server.run { port in
                FileHandleOutput.standardOutput.write(
                    "flatland sample server on http://\(host):\(port) (\(counts)); Ctrl-C stops it\n"
                        + "try: curl 'http://\(host):\(port)/devices?offset=0&count=2'\n")
            }
        } catch let error as TableServingError {
            throw CLIFailure.invalid("--tables-db: \(error.message)")
        }
    }
}
