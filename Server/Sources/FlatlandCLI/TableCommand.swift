import ArgumentParser
import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSync
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `flatland table`: one table of a server speaking the table protocol (Azure Mobile Services
/// v1, Azure Mobile Apps v2, Datasync v3), read and written through ``UntypedTable``.
///
/// The options come before the table's name, the verb and its own arguments after it:
/// `flatland table --url http://127.0.0.1:8080 todoitem list --top 3`. Every output line is one
/// compact JSON object: a row as the server sent it (`id` first, the system properties under the
/// protocol's names). Exit codes: 0 success; 1 any other failure (`error: …` on stderr); 2 a
/// usage error; 3 a 412 or 409 (the line `{"status":412,"serverItem":{…}}` on stdout); 4 `get`
/// of a row that is not there (404) or deleted (410).
struct TableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "table",
        abstract:
            "Read and write a server table over the table protocol (Mobile Services v1, Mobile Apps v2, Datasync v3).",
        usage: """
            flatland table --url <url> [--protocol v1|v2|v3] [--app-key <key>] [--system-properties <list>] <name> <verb> …
              <verb>: list [--filter ODATA] [--order-by "FIELD[ desc]"]… [--top N] [--skip N] [--select a,b] [--include-deleted]
                      get ID | insert JSON | update JSON | delete ID [--version V]
            """,
        discussion: """
            The options belong before the table's name. Every output line is one JSON object: a row as the server sent it, id first, the system properties under the protocol's names.

            list: every row of every page, in the server's order, following the server's next link (Link: <…>; rel=next, nextLink) or $skip. --filter is OData text passed as written (double a quote inside a string literal: "text eq 'O''Hara'"). --order-by takes one term per argument and may repeat. --select adds id when it is not named (rows are told apart by their id).
            get ID: one row.
            insert JSON: a JSON object; a row without "id" gets a new one (32 lowercase hex digits).
            update JSON: a JSON object holding "id" and, for concurrency, the version under the protocol's name (version, or __version in v1), sent in If-Match. PATCH in v1 and v2, PUT in v3. System properties are never sent in a body.
            delete ID [--version V]: prints nothing; --version is sent in If-Match.

            --system-properties (v1 only): * or a comma list such as updatedAt,deleted (with or without __), sent as __systemproperties on every request; v1 rows then show exactly those. --app-key is sent as X-ZUMO-APPLICATION (in every protocol).

            Exit codes: 0 success; 1 any other failure, with 'error: …' on stderr (the network, a 5xx, a 404 on update or delete, an answer that is not a row); 2 a usage error (a bad option, JSON that is not an object, a v1 body with a __ name); 3 a 412 or a 409, with the line {"status":412,"serverItem":{…}} on stdout; 4 get of a row not found (404) or gone (410).
            """
    )

    @Option(help: "The server's base URL (http or https): the table is at <url>/tables/<name>.")
    var url: String

    @Option(name: .customLong("protocol"), help: "The protocol: v1 (Mobile Services), v2 (Mobile Apps), v3 (Datasync).")
    var protocolChoice: TableProtocolChoice = .v2

    @Option(help: "The app key, sent as X-ZUMO-APPLICATION on every request.")
    var appKey: String?

    @OptionGroup var transportOptions: TransportOptions

    @OptionGroup var logging: LogLevelOption

    @Option(
        help:
            "v1 only: the system properties to return, * or a comma list (updatedAt,deleted or __updatedAt,__deleted).")
    var systemProperties: String?

    @Argument(help: "The table's name.")
    var name: String

    @Argument(help: "What to do: list, get, insert, update or delete.")
    var verb: TableVerb

    @Argument(parsing: .captureForPassthrough, help: "The verb's arguments and options (<verb> --help shows them).")
    var arguments: [String] = []

    var tableProtocol: TableProtocol { protocolChoice.tableProtocol }

    func validate() throws {
        guard !name.isEmpty else { throw ValidationError("the table's name is empty") }
        _ = try baseURL()
        _ = try systemPropertySet()
    }

    /// The `--url`, checked: http or https with a host.
    func baseURL() throws -> URL { try httpURL(url) }

    /// The `--system-properties`, parsed; nil when not given.
    func systemPropertySet() throws -> SystemProperties? {
        guard let systemProperties else { return nil }
        guard tableProtocol == .v1 else {
            throw ValidationError(
                "--system-properties is a v1 option (v2 and v3 always return the system properties)")
        }
        do {
            return try SystemProperties(parsing: systemProperties)
        } catch {
            throw ValidationError("--system-properties: \(error.message)")
        }
    }

    func run() async throws {
        let action = try TableAction(verb: verb, arguments: arguments, protocol: tableProtocol)
        guard let action else { return }  // the verb's help was printed
        let table = try makeTable()
        let output = TableOutput()
        do {
            try await action.perform(on: table, output: output)
        } catch {
            let failure = output.failure(error, verb: verb)
            // 3: the line on stdout says it all.
            if failure.exitCode == 3 { LibC.exit(3) }
            throw failure
        }
    }

    /// A table on a new in-memory session with the protocol's headers.
    func makeTable() throws -> UntypedTable {
        let version = tableProtocol
        var headers: HTTPHeaders = [:]
        // The library's filter sends the app key in v1 only; given on the command line it is
        // the user's choice in every protocol.
        if version != .v1, let appKey { headers["X-ZUMO-APPLICATION"] = appKey }
        let base = try baseURL()
        let environment: Environment
        do {
            environment = try Environment(name: "table", baseURL: base, headers: headers, allowInsecureHTTP: true)
        } catch {
            throw CLIFailure.usage("--url: \(error.message)")
        }
        var configuration = Backend.Configuration(makeTransport: transportOptions.transport.makeTransport)
        configuration.addTableHeaders(protocol: version, appKey: version == .v1 ? appKey : nil)
        if let logger = logging.logger("flatland.table") { configuration.logger = logger }
        let session = Session(user: "flatland-table", environment: environment, configuration: configuration)
        return UntypedTable(
            name, session: session, options: TableOptions(protocol: version, systemProperties: try systemPropertySet()))
    }
}

/// `--protocol`'s values.
enum TableProtocolChoice: String, ExpressibleByArgument, CaseIterable {
    case v1, v2, v3

    var tableProtocol: TableProtocol {
        switch self {
        case .v1: .v1
        case .v2: .v2
        case .v3: .v3
        }
    }
}

/// The verbs of `flatland table`.
enum TableVerb: String, ExpressibleByArgument, CaseIterable {
    case list, get, insert, update, delete
}

// MARK: The verbs' arguments

/// `list`'s options.
struct TableListArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Every row of every page of a query, in the server's order.")

    @Option(help: "An OData $filter, passed as written (double a quote inside a string literal).")
    var filter: String?

    @Option(name: .customLong("order-by"), help: "One $orderby term, FIELD or 'FIELD desc'; repeat for several.")
    var orderBy: [String] = []

    @Option(help: "The most rows to return ($top).")
    var top: Int?

    @Option(help: "The rows to skip first ($skip).")
    var skip: Int?

    @Option(help: "The fields to return, comma-separated ($select; id is added when not named).")
    var select: String?

    @Flag(help: "Return soft-deleted rows too (__includeDeleted=true).")
    var includeDeleted = false

    func validate() throws {
        if let filter, filter.allSatisfy(\.isWhitespace) { throw ValidationError("--filter is empty") }
        if let top, top < 0 { throw ValidationError("--top must not be negative") }
        if let skip, skip < 0 { throw ValidationError("--skip must not be negative") }
        _ = try order()
        _ = try fields()
    }

    func order() throws -> [TableQuery.Order] {
        try orderBy.map { term in
            do throws(TableQueryError) {
                return try TableQuery.Order(parsing: term)
            } catch {
                throw ValidationError("--order-by: \(error.message)")
            }
        }
    }

    func fields() throws -> [String] {
        guard let select else { return [] }
        let names = select.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !names.contains(where: \.isEmpty) else {
            throw ValidationError("--select: '\(select)' names an empty field")
        }
        return names.contains("id") ? names : names + ["id"]
    }

    func query() throws -> TableQuery {
        TableQuery(
            filter: filter.map { .raw($0) }, orderBy: try order(), skip: skip, top: top, select: try fields(),
            includeDeleted: includeDeleted)
    }
}

/// `get`'s and `delete`'s arguments.
struct TableRowArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get|delete", abstract: "One row by its id (delete: --version sends If-Match).")

    @Argument(help: "The row's id.")
    var id: String

    @Option(help: "delete only: the row's version, sent in If-Match.")
    var version: String?

    func validate() throws {
        guard !id.isEmpty else { throw ValidationError("the id is empty") }
    }
}

/// `insert`'s and `update`'s argument.
struct TableBodyArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "insert|update", abstract: "A row as one JSON object.")

    @Argument(help: "The row, a JSON object (update: with its id, and its version for If-Match).")
    var json: String

    func row() throws -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: json)
        } catch {
            throw ValidationError("the row is not JSON: \(error)")
        }
        guard case .object(let row) = value else {
            throw ValidationError("the row must be a JSON object, not \(value.typeName)")
        }
        return row
    }
}

/// What one run does, its arguments parsed and checked before anything is sent.
enum TableAction {
    case list(TableQuery)
    case get(String)
    case insert(JSONObject)
    case update(JSONObject)
    case delete(String, version: String?)

    /// The action of `verb` with `arguments`; nil when the verb's help was asked for (and printed).
    ///
    /// - Throws: ``CLIFailure/usage(_:)`` for arguments the verb does not take.
    init?(verb: TableVerb, arguments: [String], protocol version: TableProtocol) throws {
        do {
            switch verb {
            case .list:
                guard let parsed = try Self.parse(TableListArguments.self, arguments) else { return nil }
                self = .list(try parsed.query())
            case .get, .delete:
                guard let parsed = try Self.parse(TableRowArguments.self, arguments) else { return nil }
                if verb == .get {
                    guard parsed.version == nil else { throw ValidationError("get takes no --version") }
                    self = .get(parsed.id)
                } else {
                    self = .delete(parsed.id, version: parsed.version)
                }
            case .insert, .update:
                guard let parsed = try Self.parse(TableBodyArguments.self, arguments) else { return nil }
                let row = try parsed.row()
                if verb == .update {
                    switch row["id"] {
                    case .string(let id)? where !id.isEmpty: break
                    case .number?: break
                    default: throw ValidationError("the row to update needs its id (a string or a number)")
                    }
                    self = .update(row)
                } else {
                    self = .insert(row)
                }
            }
        } catch let error as ValidationError {
            throw CLIFailure.usage("\(verb): \(error.message)")
        }
    }

    /// The verb's arguments parsed; nil after printing the help it was asked for.
    static func parse<Arguments: ParsableCommand>(_ type: Arguments.Type, _ arguments: [String]) throws
        -> Arguments?
    {
        do {
            return try Arguments.parse(arguments)
        } catch {
            if Arguments.exitCode(for: error) == .success {
                FileHandleOutput.standardOutput.write(Arguments.fullMessage(for: error) + "\n")
                return nil
            }
            throw ValidationError(Arguments.message(for: error))
        }
    }

    /// Sends the request(s) and prints the answer.
    func perform(on table: UntypedTable, output: TableOutput) async throws(TableError<JSONObject>) {
        switch self {
        case .list(let query):
            var pages = table.pages(query).makeAsyncIterator()
            while let page = try await pages.next() {
                for row in table.rows(in: page) { output.row(row) }
            }
        case .get(let id):
            output.row(try await table.lookup(id).item)
        case .insert(let row):
            output.row(try await table.insert(row).item)
        case .update(let row):
            output.row(try await table.update(row).item)
        case .delete(let id, let version):
            try await table.delete(id, version: version)
        }
    }
}

// MARK: Output

/// How rows and failures are printed.
struct TableOutput {
    /// A row as one line, as the server sent it.
    func row(_ row: JSONObject) { line(.object(row)) }

    func line(_ value: JSONValue) {
        var writer = JSONWriter()
        writer.value(value)
        FileHandleOutput.standardOutput.write(writer.string + "\n")
    }

    /// The exit of a failed operation: a 412 or 409 prints its line and exits 3, a `get` not
    /// found or gone exits 4, a request refused before it was sent is a usage error (2),
    /// anything else 1.
    func failure(_ error: TableError<JSONObject>, verb: TableVerb) -> CLIFailure {
        // The server's own words (a 404 of a table, a 400 of a filter) follow the library's.
        var message = "\(error)"
        let body = error.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
        if !body.isEmpty { message += ": " + String(body.prefix(500)) }
        switch error.code {
        case .preconditionFailed, .conflict:
            let status = error.status ?? (error.code == .conflict ? 409 : 412)
            let item: JSONValue = error.serverItemJSON.map { .object($0) } ?? .null
            line(.object(["status": .number(JSONNumber(status)), "serverItem": item]))
            return CLIFailure(message: message, exitCode: 3)
        case .notFound, .gone:
            return CLIFailure(message: message, exitCode: verb == .get ? 4 : 1)
        case .invalidRequest:
            return CLIFailure.usage(message)
        default:
            return CLIFailure(message: message, exitCode: 1)
        }
    }
}
