import ArgumentParser
import Flatland
import FlatlandJSON
import FlatlandSync
import Foundation

/// `flatland local`: one offline table of a store file, read and written with no network. Every
/// write is applied to the file at once and queued for `flatland sync push`, in one transaction.
///
/// `flatland local --store app.sqlite todoitem insert '{"text":"Buy milk"}'`. Every output line
/// is one compact JSON object. Exit codes: 0 success; 1 any other failure (`error: …` on
/// stderr); 2 a usage error; 4 `get` of a row that is not there.
struct LocalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "local",
        abstract: "Read and write a table of a store file with no network; writes are queued for flatland sync push.",
        usage: """
            flatland local --store <file> [--server-ids] [--protocol v1|v2|v3] <name> <verb> …
              <verb>: insert JSON | update JSON | delete ID [--version V] | get ID | list
            """,
        discussion: """
            The options belong before the table's name. Every output line is one JSON object: a row, id first.

            insert JSON: a JSON object; a row without "id" gets a new one. Prints the row.
            update JSON: a JSON object with "id"; its members are merged into the stored row (as a PATCH would). When it holds the version (version, or __version in v1), that must be the stored row's version, or nothing is changed. Prints the row.
            delete ID [--version V]: prints nothing; --version is checked against the stored row's.
            get ID: the stored row. list: every stored row of the table.

            Changes to one row collapse in the queue (insert + update is one insert, insert + delete is nothing, update + delete is a delete); an insert after an insert or an update, or anything after a delete, is refused. A change to a row whose operation is being pushed (or was sent with its answer lost: state attempted) is queued behind it, never merged into it. --server-ids declares that the server assigns the table's ids (the store remembers it). --protocol (default v2) names the system properties as that protocol does.

            Exit codes: 0 success; 1 any other failure, with 'error: …' on stderr (no such row for update or delete, a stale version, a change the queue refuses, a file that is not a store); 2 a usage error; 4 get of a row that is not there.
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Flag(help: "The server assigns this table's ids (remembered in the store for the table).")
    var serverIds = false

    @Argument(help: "The table's name.")
    var name: String

    @Argument(help: "What to do: insert, update, delete, get or list.")
    var verb: TableVerb

    @Argument(parsing: .captureForPassthrough, help: "The verb's arguments (<verb> --help shows them).")
    var arguments: [String] = []

    func validate() throws {
        guard !name.isEmpty else { throw ValidationError("the table's name is empty") }
    }

    func run() async throws {
        let action: TableAction
        if verb == .list {
            // The local list is every stored row: it takes no query.
            guard arguments.isEmpty else {
                throw CLIFailure.usage("list: takes no arguments (got \(arguments.joined(separator: " ")))")
            }
            action = .list(TableQuery())
        } else {
            guard let parsed = try TableAction(verb: verb, arguments: arguments, protocol: storeOptions.tableProtocol)
            else { return }  // the verb's help was printed
            action = parsed
        }
        let store = try await OfflineStore.open(
            path: storeOptions.store, baseURL: nil, protocol: storeOptions.tableProtocol)
        try await store.run { store in
            let table = store.sync.table(name, serverAssignsIDs: serverIds)
            try perform(action, on: table)
        }
    }

    private func perform(_ action: TableAction, on table: OfflineTable) throws {
        if case .get(let id) = action {
            guard let row = table.lookup(id) else {
                throw CLIFailure(message: "table \(name): no local row \(id)", exitCode: 4)
            }
            printLine(row)
            return
        }
        do throws(SyncError) {
            switch action {
            case .list:
                for row in table.rows() { printLine(row) }
            case .get:
                break  // answered above
            case .insert(let row):
                printLine(try table.insert(row))
            case .update(let row):
                printLine(try table.update(row))
            case .delete(let id, let version):
                try table.delete(id, version: version)
            }
        } catch {
            throw error.failure
        }
    }
}
