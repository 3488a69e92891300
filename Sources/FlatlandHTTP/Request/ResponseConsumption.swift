/// How a request's successful (2xx) response body is consumed.
///
/// ``ingest`` streams it into the session's store through the ingestor, as every request did
/// before (a table's page, an entity). A request that reads an answer that is not entities (a
/// server's capabilities, a batch's answers, a row looked up to settle a lost answer) asks for
/// ``bytes(limit:)`` or ``json(limit:)`` instead: the body is read whole into
/// ``HTTPResult/body`` (and, for JSON, parsed into ``HTTPResult/json``), and the store is not
/// touched. A body longer than `limit` fails the request with
/// ``HTTPError/Code-swift.struct/decoding``; a body that is not JSON fails a `json` request the
/// same way.
///
/// ```swift
/// let result = try await session.send(.get, "/tables/$capabilities", consuming: .json())
/// if case .object(let capabilities)? = result.json { … }
/// ```
public enum ResponseConsumption: Sendable, Hashable {
    /// Streamed into the store through the ingestor (the default).
    case ingest
    /// Read whole, at most `limit` bytes, into ``HTTPResult/body``.
    case bytes(limit: Int = ResponseConsumption.defaultLimit)
    /// Read whole, at most `limit` bytes, and parsed into ``HTTPResult/json``.
    case json(limit: Int = ResponseConsumption.defaultLimit)

    /// 16 MiB: the largest body ``bytes(limit:)`` and ``json(limit:)`` read by default.
    public static let defaultLimit = 16 << 20

    /// The most bytes read, or nil when the body is streamed into the store.
    var limit: Int? {
        switch self {
        case .ingest: nil
        case .bytes(let limit), .json(let limit): max(0, limit)
        }
    }
}
