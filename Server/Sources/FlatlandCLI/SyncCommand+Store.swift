import ArgumentParser
import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import FlatlandSync
import Foundation
import Logging

/// The store file of `flatland local` and `flatland sync`: whatever user and environment the
/// session names, its store is the one SQLite file given with `--store`, created if needed.
struct StoreFileStorage: StorePersistenceFactory {
    /// The file, as an absolute path.
    let path: String

    func makePersistence(user: String, environment: String) throws -> any StorePersistence {
        try SQLitePersistence(path: path)
    }

    func destroyPersistence(_ persistence: any StorePersistence, user: String, environment: String) throws {
        try (persistence as? SQLitePersistence)?.destroy()
    }

    func closePersistence(_ persistence: any StorePersistence) {
        (persistence as? SQLitePersistence)?.close()
    }
}

/// An open store file: a persistent session on it and its offline side.
struct OfflineStore {
    let session: Session
    let sync: SyncContext

    /// Opens (creating if needed) the SQLite file at `path` for a session with `baseURL`
    /// (a placeholder for the local-only commands) speaking `version`.
    ///
    /// - Throws: ``CLIFailure`` (exit 1) when the file cannot be opened or is not a store.
    static func open(
        path: String, baseURL: URL?, protocol version: TableProtocol, logger: Logger? = nil,
        transport: TransportChoice = .platformDefault
    ) async throws -> OfflineStore {
        guard !path.isEmpty else { throw CLIFailure.usage("--store: the file name is empty") }
        let file = URL(fileURLWithPath: path).standardizedFileURL.path
        let session: Session
        do {
            let environment = try Environment(
                name: "sync", baseURL: baseURL ?? URL(string: "http://127.0.0.1")!, allowInsecureHTTP: true)
            var configuration = Backend.Configuration(makeTransport: transport.makeTransport)
            configuration.addTableHeaders(protocol: version)
            if let logger { configuration.logger = logger }
            session = try Session(
                user: "flatland-sync", environment: environment, storage: .persistent(StoreFileStorage(path: file)),
                configuration: configuration)
        } catch {
            throw CLIFailure.invalid("--store \(path): \(error)")
        }
        do {
            let sync = try SyncContext(
                session: session,
                options: TableOptions(protocol: version, systemProperties: version == .v1 ? .all : nil))
            return OfflineStore(session: session, sync: sync)
        } catch {
            await session.close()
            throw CLIFailure.invalid("--store \(path): \(error)")
        }
    }

    /// Runs `body` and closes the session whatever happens (the file is folded and released).
    func run<T>(_ body: (OfflineStore) async throws -> T) async throws -> T {
        do {
            let result = try await body(self)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }
}

/// `text` as an http or https URL with a host (`--url`), or a usage error naming `option`.
func httpURL(_ text: String, option: String = "--url") throws -> URL {
    guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
        let host = url.host, !host.isEmpty
    else { throw ValidationError("\(option): '\(text)' is not an http(s) URL with a host") }
    return url
}

// MARK: Output

/// One compact JSON object as one line on stdout.
func printLine(_ object: JSONObject) {
    TableOutput().line(.object(object))
}

extension JSONValue {
    /// A string, or null.
    static func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
    /// A number, or null.
    static func integer<N: BinaryInteger>(_ value: N?) -> JSONValue {
        value.map { .number(JSONNumber(Int($0))) } ?? .null
    }
}

extension SyncOperation {
    /// `pending`'s line: `{"sequence":…,"table":…,"id":…,"kind":…,"state":…}`.
    var line: JSONObject {
        [
            "sequence": .integer(sequence), "table": .string(table), "id": .string(itemID),
            "kind": .string(kind.rawValue), "state": .string(state.rawValue),
        ]
    }

    /// `errors`' line: `pending`'s, with `status` and `serverItem`.
    var errorLine: JSONObject {
        var line = line
        line["status"] = .integer(status)
        line["serverItem"] = serverItem.map { .object($0) } ?? .null
        return line
    }
}

extension PushOutcome {
    /// `push`'s line: `{"sequence":…,"table":…,"id":…,"kind":…,"status":HTTP,"result":…}`.
    var line: JSONObject {
        [
            "sequence": .integer(sequence), "table": .string(table), "id": .string(id),
            "kind": .string(kind.rawValue), "status": .integer(status), "result": .string(result.rawValue),
        ]
    }
}

extension PushResult {
    /// The exit of a push: 4 when it stopped early (the network, a 401: every operation kept),
    /// 3 when conflicts, errors or uncertain operations are left in the queue, 0 otherwise; nil
    /// for 0.
    var failure: CLIFailure? {
        if let abortReason { return CLIFailure(message: "the push was aborted: \(abortReason)", exitCode: 4) }
        let left = outcomes.filter { $0.result == .conflict || $0.result == .error || $0.result == .uncertain }
        guard !left.isEmpty else { return nil }
        return CLIFailure(
            message:
                "\(left.count) operation(s) left in the queue with a conflict, an error or an uncertain answer (flatland sync errors lists them)",
            exitCode: 3)
    }
}

// MARK: Errors

extension SyncError {
    /// The exit of a failed offline operation: 4 when a request could not reach the server or
    /// was refused with 401 (nothing queued is lost), a pull's failed push as that push, 2 for
    /// a row the protocol cannot take, 1 otherwise.
    var failure: CLIFailure {
        var message = description
        if let tableError {
            let body = tableError.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
            if !body.isEmpty { message += ": " + String(body.prefix(500)) }
        }
        if code == .pushFailed, let push, let failure = push.failure {
            return CLIFailure(message: message + " (\(failure.message))", exitCode: failure.exitCode)
        }
        if let tableError, tableError.isAbort {
            return CLIFailure(message: message, exitCode: 4)
        }
        if code == .invalidRow || tableError?.code == .invalidRequest { return CLIFailure.usage(message) }
        return CLIFailure.invalid(message)
    }
}

extension TableError {
    /// A failure that says nothing about the request: the network, a cancel, a 401.
    var isAbort: Bool {
        if status == 401 { return true }
        guard let http = httpError else { return false }
        return http.code == .transport || http.code == .cancelled || http.status == 401
    }
}

// MARK: Options

/// The options every offline command takes before its verb.
struct StoreOptions: ParsableArguments {
    @Option(help: "The SQLite store file (created if needed).")
    var store: String

    @Option(name: .customLong("protocol"), help: "The protocol: v1 (Mobile Services), v2 (Mobile Apps), v3 (Datasync).")
    var protocolChoice: TableProtocolChoice = .v2

    var tableProtocol: TableProtocol { protocolChoice.tableProtocol }

    func validate() throws {
        guard !store.isEmpty else { throw ValidationError("--store: the file name is empty") }
    }
}
