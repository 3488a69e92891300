import Flatland
import FlatlandHTTP
import FlatlandJSON
import Foundation

/// How the app settles an ``SyncOperation/State/uncertain`` insert (``SyncContext/settle(_:_:)``).
public enum UncertainResolution: Sendable, Hashable {
    /// Looks the row up on the server by these fields of the row as the insert sent it
    /// (`$filter=<field> eq <value> and …`). One match is the insert, applied with its answer
    /// lost: the local row takes the server's (its id replaces the local one, as the insert's
    /// answer would have). No match: the insert never arrived, and it goes back to the queue for
    /// the next push. More than one: ``SyncErrorCode/ambiguousLookup``, nothing changed.
    case lookUp(matching: [String])
    /// Sends it again with the next push: the app accepts that the server may then hold the
    /// row twice.
    case resend
    /// Drops it from the queue, as ``SyncContext/cancel(_:)``; the local row stays as it is.
    case drop
}

/// What ``SyncContext/settle(_:_:)`` did.
public enum SettleResult: String, Sendable, Hashable {
    /// The lookup found the row on the server: the operation is settled.
    case found
    /// The lookup found no such row: the operation is queued again.
    case notFound
    /// Queued again, to be sent by the next push.
    case queued
    /// Dropped from the queue.
    case dropped
}

extension SyncContext {
    /// Settles an ``SyncOperation/State/uncertain`` insert: looks it up on the server, sends it
    /// again, or drops it (``UncertainResolution``). Nothing of the local row is lost whichever
    /// way.
    ///
    /// - Throws: ``SyncErrorCode/notFound`` (no such operation), ``SyncErrorCode/invalidOperation``
    ///   (it is not uncertain), ``SyncErrorCode/invalidRow`` (a field the local row lacks, or
    ///   whose value is an object or an array), ``SyncErrorCode/ambiguousLookup``,
    ///   ``SyncErrorCode/http`` (the lookup failed; nothing changed).
    @discardableResult
    public func settle(_ sequence: Int64, _ resolution: UncertainResolution) async throws(SyncError) -> SettleResult {
        guard let operation = try await queueRead({ db in try SyncQueue.operation(db, sequence: sequence) }) else {
            throw SyncError(.notFound, "no operation \(sequence) in the queue")
        }
        guard operation.state == .uncertain else {
            throw SyncError(
                .invalidOperation, "operation \(sequence) is \(operation.state.rawValue), not uncertain",
                table: operation.table)
        }
        switch resolution {
        case .drop:
            try await queueWrite { db in
                guard try SyncQueue.exists(db, sequence: sequence) else {
                    throw SyncError(.notFound, "no operation \(sequence) in the queue")
                }
                try SyncQueue.apply(.cancelled, db, sequence: sequence)
            }
            return .dropped
        case .resend:
            try await queueWrite { db in try SyncQueue.apply(.released, db, sequence: sequence) }
            return .queued
        case .lookUp(let fields):
            let engine = engine(for: operation.table)
            let matches = try await lookUp(operation, by: fields, engine: engine)
            switch matches.count {
            case 0:
                try await queueWrite { db in try SyncQueue.apply(.released, db, sequence: sequence) }
                return .notFound
            case 1:
                try await commitAnswers([(operation, WriteAnswer(status: 200, row: matches[0]))], engine: engine)
                return .found
            default:
                throw SyncError(
                    .ambiguousLookup,
                    "\(matches.count) server rows match operation \(sequence) by \(fields.joined(separator: ", ")): name fields that tell them apart",
                    table: operation.table)
            }
        }
    }

    /// The server's rows whose `fields` equal the local row's, read as JSON (at most 2: one more
    /// than an answer needs).
    private func lookUp(_ operation: SyncOperation, by fields: [String], engine: TableEngine)
        async throws(SyncError) -> [JSONObject]
    {
        guard !fields.isEmpty else {
            throw SyncError(.invalidRow, "name at least one field to look the row up by", table: operation.table)
        }
        // The data it was sent with; the local row when that was not kept.
        guard let local = operation.sentRow ?? engine.row(engine.storeID(operation.itemID)) else {
            throw SyncError(.notFound, "no local row \(operation.itemID)", table: operation.table)
        }
        var terms: [String] = []
        for field in fields {
            guard let value = local[field] else {
                throw SyncError(.invalidRow, "the local row has no field '\(field)'", table: operation.table)
            }
            guard let literal = Self.literal(value) else {
                throw SyncError(
                    .invalidRow, "field '\(field)' holds an object or an array: it cannot be looked up",
                    table: operation.table)
            }
            terms.append("\(field) eq \(literal)")
        }
        let path: String
        let result: HTTPResult
        do {
            path = try engine.queryPath(TableQuery(filter: .raw(terms.joined(separator: " and ")), top: 2))
        } catch {
            throw SyncError(.invalidRow, error.message, table: operation.table)
        }
        do {
            result = try await session.send(.get, path, consuming: .json())
        } catch {
            let mapped = engine.mapped(error)
            throw SyncError(.http, mapped.message, table: operation.table, tableError: mapped)
        }
        let items: [JSONValue]
        switch result.json {
        case .array(let rows)?: items = rows
        case .object(let envelope)?:
            if case .array(let rows)? = envelope["items"] {
                items = rows
            } else if case .array(let rows)? = envelope["results"] {
                items = rows
            } else {
                items = []
            }
        default: items = []
        }
        return items.compactMap { item in
            guard case .object(let row) = item else { return nil }
            return row
        }
    }

    /// An OData literal for a JSON scalar; nil for an object or an array.
    static func literal(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .number(let number): number.description
        case .bool(let flag): flag ? "true" : "false"
        case .null: "null"
        default: nil
        }
    }
}
