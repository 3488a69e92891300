import ArgumentParser
import Flatland
import FlatlandJSON
import FlatlandSync
import Foundation

/// `flatland sync`: meets the server with the offline tables of a store file — pushes the queue
/// `flatland local` filled, pulls tables incrementally, purges them, and shows the queue.
///
/// `flatland sync --store app.sqlite --url http://127.0.0.1:8080 push --on-conflict server-wins`.
/// Every output line is one compact JSON object. Exit codes: 0 done; 1 an error (`error: …` on
/// stderr); 2 a usage error; 3 the push finished with conflicts or errors left in the queue; 4
/// the push or pull was aborted (the network, a 401) with nothing queued lost. A pull whose
/// push first fails exits as that push would.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Push a store file's queued changes to a server, pull its tables, purge them, show the queue.",
        usage: """
            flatland sync --store <file> [--url <url>] [--protocol v1|v2|v3] [--log-level LEVEL] <verb> …
              <verb>: push [--on-conflict client-wins|server-wins|fail] [--batch auto|never] [--batch-size N]
                      pull NAME [--query-id QID] [--filter ODATA] [--page-size N]
                      reconcile NAME [--by listing|get]
                      purge NAME [--query-id QID] [--force] | pending | errors
                      cancel SEQ | settle SEQ (--look-up FIELD… | --resend | --drop)
            """,
        discussion: """
            The options belong before the verb; push, pull and reconcile need --url (the tables are at <url>/tables/<name>).

            push: sends the queue in order, in batches of --batch-size (default 100) when the server advertises them (GET /tables/$capabilities; --batch never, or a server without them, sends one request per operation), every write with its Idempotency-Key, and prints one line per operation sent, whichever way it went: {"sequence":…,"table":…,"id":…,"kind":…,"status":HTTP,"result":"ok|conflict|error|resolved|uncertain"} (status null when no answer came). --on-conflict (default fail): client-wins resends the local row over the server's version, server-wins takes the server's row and drops the operation (both print resolved); fail leaves the operation in the queue, failed, with the server's row. An update of a row the server no longer has (404, 410) is a conflict too: server-wins removes the row locally, client-wins inserts it again under its id. An insert whose answer was lost, in a table whose server assigns the ids (--server-ids) and does not advertise idempotency keys, is not sent again: it prints result uncertain (every push, until settle or cancel) and the push exits 3.
            pull NAME: with --query-id, incremental and resumable (a delta token per table and query id); without, a full read of the query. --filter is OData text passed as written; --page-size defaults to 50 ($top in every protocol; the pull pages by the key (updatedAt, id) and follows the server's next links). Queued operations are pushed first (as push without --on-conflict); when that leaves any in the queue the pull is cancelled. Prints {"table":…,"pages":…,"rows":…,"deleted":…,"skipped":…,"token":…} at the end (rows: received from the server; deleted: removed locally; skipped: left alone for their queued operations); progress goes to stderr.
            reconcile NAME: removes the local rows the server no longer has (hard-deleted there, which a pull never sees), except rows with queued operations; --by listing (the default) reads the table's ids in one $select=id listing, --by get asks for each row. Prints {"table":…,"checked":…,"removed":…}.
            purge NAME: drops the table's rows, operations and delta tokens; refused while it has queued operations unless --force. With --query-id, resets that query's delta token only.
            pending: the queue, one operation per line in order: {"sequence":…,"table":…,"id":…,"kind":…,"state":…}; state is pending (queued), attempted (sent, its answer not in: the server may have it), failed (answered with an error or a conflict) or uncertain (an insert whose server assigns the id and whose answer was lost, held because sending it again could make a second row).
            errors: the failed and uncertain operations, each with "status" and "serverItem" as well.
            cancel SEQ: drops operation SEQ from the queue, whatever its state; the local row stays as it is (a pull brings the server's row back over it; reconcile removes a row the server does not have). Prints the dropped operation's pending line (only its sequence for a queue row this version cannot read).
            settle SEQ: settles an uncertain insert. --look-up FIELD (repeatable) looks the row up on the server by those fields of the local row: one match is the insert, which then takes the server's row and id; none sends it again with the next push; more than one is an error. --resend sends it again with the next push; --drop drops it (as cancel). Prints {"sequence":…,"result":"found|notFound|queued|dropped"}.

            Exit codes: 0 done; 1 an error, with 'error: …' on stderr (cancel or settle of an operation that is not in the queue); 2 a usage error; 3 the push finished with conflicts, errors or uncertain operations left in the queue; 4 the push or pull was aborted (the network, a 401) and nothing queued was lost. A pull whose push first fails exits as that push would (3 or 4), after printing that push's lines.
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var transportOptions: TransportOptions

    @OptionGroup var logging: LogLevelOption

    @Option(help: "The server's base URL (http or https); push, pull and reconcile need it.")
    var url: String?

    @Argument(help: "What to do: push, pull, reconcile, purge, pending, errors, cancel or settle.")
    var verb: SyncVerb

    @Argument(parsing: .captureForPassthrough, help: "The verb's arguments and options (<verb> --help shows them).")
    var arguments: [String] = []

    func validate() throws {
        if let url { _ = try httpURL(url) }
    }

    func run() async throws {
        guard let action = try SyncAction(verb: verb, arguments: arguments) else { return }
        var baseURL: URL?
        if let url { baseURL = try httpURL(url) }
        if action.needsServer, baseURL == nil {
            throw CLIFailure.usage("\(verb) talks to the server: give --url before the verb")
        }
        let store = try await OfflineStore.open(
            path: storeOptions.store, baseURL: baseURL, protocol: storeOptions.tableProtocol,
            logger: logging.logger("flatland.sync"), transport: transportOptions.transport)
        try await store.run { store in try await action.perform(on: store.sync) }
    }
}

/// The verbs of `flatland sync`.
enum SyncVerb: String, ExpressibleByArgument, CaseIterable {
    case push, pull, reconcile, purge, pending, errors, cancel, settle
}

/// `--by`'s values.
enum ReconcileChoice: String, ExpressibleByArgument, CaseIterable {
    case listing, get

    var method: ReconcileMethod {
        switch self {
        case .listing: .listing
        case .get: .get
        }
    }
}

/// `--on-conflict`'s values.
enum ConflictChoice: String, ExpressibleByArgument, CaseIterable {
    case clientWins = "client-wins"
    case serverWins = "server-wins"
    case fail

    var handler: ConflictHandler? {
        switch self {
        case .clientWins: ConflictPolicy.clientWins
        case .serverWins: ConflictPolicy.serverWins
        case .fail: nil
        }
    }
}

// MARK: The verbs' arguments

/// The table's name, the first argument of `pull`, `reconcile` and `purge`.
struct TableNameArgument: ParsableArguments {
    @Argument(help: "The table's name.")
    var name: String

    func validate() throws {
        guard !name.isEmpty else { throw ValidationError("the table's name is empty") }
    }
}

/// `push`'s options.
struct SyncPushArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Send the queue in order, one request per operation.")

    @Option(help: "How a conflict (412, 409) is settled: client-wins, server-wins, or fail (left in the queue).")
    var onConflict: ConflictChoice = .fail

    @Option(help: "auto: in batches when the server advertises them; never: one request per operation.")
    var batch: BatchChoice = .auto

    @Option(help: "The most operations in one batch.")
    var batchSize = PushOptions.defaultBatchSize

    func validate() throws {
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be 1 or more") }
    }

    var options: PushOptions {
        PushOptions(batching: batch == .auto ? .automatic : .never, batchSize: batchSize)
    }
}

/// `--batch`'s values.
enum BatchChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, never
}

/// `pull`'s arguments.
struct SyncPullArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull", abstract: "Bring a table's rows in, incrementally with a query id.")

    @OptionGroup var table: TableNameArgument

    @Option(help: "The query's id: the pull is incremental, with a delta token kept for the table and this id.")
    var queryId: String?

    @Option(help: "An OData $filter, passed as written (double a quote inside a string literal).")
    var filter: String?

    @Option(help: "The rows per request.")
    var pageSize: Int = 50

    func validate() throws {
        if let queryId, queryId.isEmpty { throw ValidationError("--query-id is empty") }
        if let filter, filter.allSatisfy(\.isWhitespace) { throw ValidationError("--filter is empty") }
        guard pageSize > 0 else { throw ValidationError("--page-size must be at least 1") }
    }
}

/// `reconcile`'s arguments.
struct SyncReconcileArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile", abstract: "Remove the local rows the server no longer has.")

    @OptionGroup var table: TableNameArgument

    @Option(help: "How the server is asked: listing (one $select=id listing) or get (one GET per row).")
    var by: ReconcileChoice = .listing

}

/// `purge`'s arguments.
struct SyncPurgeArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge", abstract: "Drop a table's rows, operations and delta tokens, or one query's token.")

    @OptionGroup var table: TableNameArgument

    @Option(help: "Reset this query's delta token only.")
    var queryId: String?

    @Flag(help: "Purge even with operations queued (they are dropped).")
    var force = false

    func validate() throws {
        if let queryId, queryId.isEmpty { throw ValidationError("--query-id is empty") }
    }
}

/// `cancel`'s argument.
struct SyncCancelArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Drop one operation from the queue; the local row stays as it is.")

    @Argument(help: "The operation's sequence number (flatland sync pending shows it).")
    var sequence: Int64
}

/// `settle`'s arguments.
struct SyncSettleArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settle", abstract: "Settle an uncertain insert: look it up, send it again, or drop it.")

    @Argument(help: "The operation's sequence number (flatland sync errors shows it).")
    var sequence: Int64

    @Option(
        name: .customLong("look-up"), help: "A field of the local row to find the row on the server by (repeatable).")
    var lookUp: [String] = []

    @Flag(help: "Send it again with the next push (the server may then hold the row twice).")
    var resend = false

    @Flag(help: "Drop it from the queue; the local row stays.")
    var drop = false

    func validate() throws {
        let chosen = (lookUp.isEmpty ? 0 : 1) + (resend ? 1 : 0) + (drop ? 1 : 0)
        guard chosen == 1 else { throw ValidationError("give exactly one of --look-up FIELD, --resend, --drop") }
        if lookUp.contains(where: \.isEmpty) { throw ValidationError("--look-up: the field's name is empty") }
    }

    var resolution: UncertainResolution {
        if resend { return .resend }
        if drop { return .drop }
        return .lookUp(matching: lookUp)
    }
}

/// `pending`'s and `errors`' (no) arguments.
struct SyncQueueArguments: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pending|errors", abstract: "The queue.")
}

/// What one run does, its arguments parsed and checked before the file is opened.
enum SyncAction {
    case push(ConflictChoice, PushOptions)
    case pull(String, queryID: String?, query: TableQuery, pageSize: Int)
    case reconcile(String, ReconcileMethod)
    case purge(String, queryID: String?, force: Bool)
    case pending
    case errors
    case cancel(Int64)
    case settle(Int64, UncertainResolution)

    /// The action of `verb` with `arguments`; nil when the verb's help was asked for (and printed).
    ///
    /// - Throws: ``CLIFailure/usage(_:)`` for arguments the verb does not take.
    init?(verb: SyncVerb, arguments: [String]) throws {
        do {
            switch verb {
            case .push:
                guard let parsed = try TableAction.parse(SyncPushArguments.self, arguments) else { return nil }
                self = .push(parsed.onConflict, parsed.options)
            case .pull:
                guard let parsed = try TableAction.parse(SyncPullArguments.self, arguments) else { return nil }
                self = .pull(
                    parsed.table.name, queryID: parsed.queryId,
                    query: TableQuery(filter: parsed.filter.map { .raw($0) }),
                    pageSize: parsed.pageSize)
            case .reconcile:
                guard let parsed = try TableAction.parse(SyncReconcileArguments.self, arguments) else { return nil }
                self = .reconcile(parsed.table.name, parsed.by.method)
            case .purge:
                guard let parsed = try TableAction.parse(SyncPurgeArguments.self, arguments) else { return nil }
                self = .purge(parsed.table.name, queryID: parsed.queryId, force: parsed.force)
            case .pending, .errors:
                guard try TableAction.parse(SyncQueueArguments.self, arguments) != nil else { return nil }
                self = verb == .pending ? .pending : .errors
            case .cancel:
                guard let parsed = try TableAction.parse(SyncCancelArguments.self, arguments) else { return nil }
                self = .cancel(parsed.sequence)
            case .settle:
                guard let parsed = try TableAction.parse(SyncSettleArguments.self, arguments) else { return nil }
                self = .settle(parsed.sequence, parsed.resolution)
            }
        } catch let error as ValidationError {
            throw CLIFailure.usage("\(verb): \(error.message)")
        }
    }

    /// Whether the verb talks to the server.
    var needsServer: Bool {
        switch self {
        case .push, .pull, .reconcile: true
        case .settle(_, let resolution): resolution != .drop && resolution != .resend
        case .purge, .pending, .errors, .cancel: false
        }
    }

    /// Does it and prints the lines.
    func perform(on sync: SyncContext) async throws {
        var pushFailure: CLIFailure?
        do throws(SyncError) {
            switch self {
            case .push(let choice, let options):
                let result = await sync.push(onConflict: choice.handler, options: options)
                for outcome in result.outcomes { printLine(outcome.line) }
                pushFailure = result.failure
            case .pull(let name, let queryID, let query, let pageSize):
                let table = sync.table(name)
                let queued = try sync.operations(table: name).count
                if queued > 0 {
                    FileHandleOutput.standardError.write(
                        "pull \(name): pushing the queue first (\(queued) operations)\n")
                }
                let progress = Self.reportProgress(of: sync)
                defer { progress.cancel() }
                do throws(SyncError) {
                    let result = try await table.pull(queryID: queryID, query: query, pageSize: pageSize)
                    printLine([
                        "table": .string(result.table), "pages": .integer(result.pages), "rows": .integer(result.rows),
                        "deleted": .integer(result.deleted), "skipped": .integer(result.skipped),
                        "token": .text(result.token),
                    ])
                } catch {
                    // The push before the pull failed: its lines, and its exit.
                    if error.code == .pushFailed, let push = error.push {
                        for outcome in push.outcomes { printLine(outcome.line) }
                    }
                    throw error
                }
            case .reconcile(let name, let method):
                let result = try await sync.table(name).reconcile(by: method)
                printLine([
                    "table": .string(result.table), "checked": .integer(result.checked),
                    "removed": .integer(result.removed),
                ])
            case .purge(let name, let queryID, let force):
                try sync.table(name).purge(queryID: queryID, force: force)
            case .pending:
                for operation in try sync.operations() { printLine(operation.line) }
            case .errors:
                for operation in try sync.failedOperations() { printLine(operation.errorLine) }
            case .cancel(let sequence):
                // A row this version cannot read is dropped all the same.
                let dropped = (try? sync.operations())?.first { $0.sequence == sequence }
                try sync.cancel(sequence)
                printLine(dropped?.line ?? ["sequence": .integer(sequence)])
            case .settle(let sequence, let resolution):
                let result = try await sync.settle(sequence, resolution)
                printLine(["sequence": .integer(sequence), "result": .string(result.rawValue)])
            }
        } catch {
            throw error.failure
        }
        if let pushFailure { throw pushFailure }
    }

    /// Writes the context's progress to stderr, one line per pulled page or pushed operation,
    /// until cancelled.
    private static func reportProgress(of sync: SyncContext) -> Task<Void, Never> {
        let updates = sync.progress()
        return Task {
            for await update in updates {
                switch update {
                case .push(let sent, let total):
                    FileHandleOutput.standardError.write("push: \(sent)/\(total) operations\n")
                case .pull(let table, let pages, let rows):
                    FileHandleOutput.standardError.write("pull \(table): page \(pages), \(rows) rows\n")
                }
            }
        }
    }
}
