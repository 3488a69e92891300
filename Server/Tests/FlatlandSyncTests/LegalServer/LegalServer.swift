import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSync
import Foundation
import Synchronization

@testable import FlatlandServer

// # LegalServer: a table server of legal but unusual behaviour, for pulls
//
// An in-process table server, in memory, that plugs into any ``Session`` as its transport:
//
// ```swift
// let server = LegalServer(.init(protocol: .v2, pageCap: 20, rowsPerTick: 100, shufflesTies: true))
// server.insert(count: 230)                       // rows r0000…r0229, 100 per updatedAt tick
// var configuration = Backend.Configuration(makeTransport: { server })
// configuration.addTableHeaders(protocol: .v2)
// let session = try Session(user: "u", environment: LegalServer.environment, …, configuration: configuration)
// … pull …
// #expect(server.rows(includeDeleted: true) == what the device holds)
// ```
//
// It serves `GET /tables/{any name}` (any base path) the way the Azure Mobile Apps (v2: a bare
// array or `{"results":…,"count":…}`, `Link: <…>; rel=next`) and Datasync (v3:
// `{"items":…,"count":…,"nextLink":…}`) servers do: `$filter` (the table server's own OData
// parser), `$orderby`, `$skip`, `$top`, `__includeDeleted`, `$count`/`$inlinecount`. Every
// behaviour below is legal for those protocols and is a switch of ``Behaviour``, changeable
// between requests (``behaviour``):
//
// - ``Behaviour/pageCap``: at most this many rows per answer, whatever `$top` asks (Node's
//   `pageSize`, a proxy); the rest is offered by a next link.
// - ``Behaviour/rowsPerTick``: a coarse clock, this many writes per `updatedAt` value.
// - ``Behaviour/shufflesTies``: rows equal on every `$orderby` term come in a new random order
//   on every request (ordering by `updatedAt` alone then pages unstably).
// - ``Behaviour/link``: the next link as a query string (Datasync), an absolute URL, an absolute
//   path, or none at all; ``Behaviour/linkInHeader`` puts it in `Link:` (v2's place) rather than
//   the body's `nextLink` (v3's).
// - ``Behaviour/updatesPerRequest``: before answering a listing, this many random rows are
//   updated (a new `updatedAt` tick, a new version), until ``Behaviour/updateBudget`` is spent.
// - ``Behaviour/chunkSize`` and ``Behaviour/chunkDelay``: the body in chunks with a wait
//   between them (a slow body); ``Behaviour/stallsAfter``: after that many bytes nothing more
//   comes until the request's own idle timeout (``HTTPRequest/timeout``) cuts it, as
//   URLSession's would.
// - ``Behaviour/selfLink``: the next link is the request's own URL.
// - ``Behaviour/ignoresSkip``: `$skip` is read as 0.
// - ``Behaviour/writesBeforeListings``: another client's writes, made just before the chosen
//   listings are answered, on the clock as it stands (in the tick of the last write, unless
//   one of them moves it on): a row written into the tick a pull is reading.
// - ``Behaviour/failsListings`` (503 for chosen requests) and ``Behaviour/bodyOverride`` (a 200
//   with another body): faults, for resumes and for answers that are not pages.
//
// Its state is all in memory behind a lock: ``insert(count:)``, ``update(_:)``,
// ``delete(_:)``, ``rows(includeDeleted:)`` and ``requests`` (the paths and queries asked for)
// are for the test's side. Writes over HTTP (POST, PATCH, DELETE) are not served (405): a
// simulation that pushes needs them added. Randomness comes from ``Behaviour/seed`` alone, so a
// seed replays the same answers for the same requests.
final class LegalServer: HTTPTransport {
    /// The server's switches.
    struct Behaviour: Sendable {
        /// How a next link is written.
        enum Link: Sendable, CaseIterable {
            /// `$skip=…&$top=…&…`, resolved against the request's path (Datasync).
            case queryString
            /// `http://legal.test/api/tables/…?…` (Node, .NET servers).
            case absoluteURL
            /// `/api/tables/…?…`.
            case absolutePath
            /// No link: the client must find out itself that rows remain.
            case none
        }

        var `protocol`: TableProtocol = .v2
        /// The rows of an answer without `$top`.
        var pageSize = 50
        var pageCap: Int?
        var rowsPerTick = 1
        var shufflesTies = false
        var link: Link = .absoluteURL
        var linkInHeader = true
        var updatesPerRequest = 0
        var updateBudget = 0
        var chunkSize: Int?
        var chunkDelay: Duration = .zero
        var stallsAfter: Int?
        /// Whether a stalled body (``stallsAfter``) ignores a cancel, and ends only at the
        /// request's idle timeout: a transport that does not honour cancellation.
        var stallIgnoresCancel = false
        var selfLink = false
        var ignoresSkip = false
        /// The listings (counted from 1) answered `503` with no page: a failed request, for
        /// resumes.
        var failsListings: Set<Int> = []
        /// Writes made just before the listing (counted from 1) is answered.
        var writesBeforeListings: [Int: [Write]] = [:]
        /// A body sent instead of the page, with status 200 (a body that is not a page).
        var bodyOverride: String?
        var seed: UInt64 = 1

        /// The protocol's defaults: v2 links in the `Link` header as absolute URLs, v3 in the
        /// body as query strings.
        init(
            protocol version: TableProtocol = .v2, pageSize: Int = 50, pageCap: Int? = nil, rowsPerTick: Int = 1,
            shufflesTies: Bool = false, link: Link? = nil, seed: UInt64 = 1
        ) {
            self.protocol = version
            self.pageSize = pageSize
            self.pageCap = pageCap
            self.rowsPerTick = rowsPerTick
            self.shufflesTies = shufflesTies
            self.link = link ?? (version == .v3 ? .queryString : .absoluteURL)
            linkInHeader = version != .v3
            self.seed = seed
        }
    }

    /// A row as the server keeps it.
    struct Row: Sendable, Hashable {
        var id: String
        var text: String
        /// Microseconds since 1970.
        var updatedAt: Int64
        var version: Int
        var deleted: Bool
    }

    /// The base URL sessions on this server use.
    static let baseURL = URL(string: "http://legal.test/api")!

    /// An environment on ``baseURL``.
    static var environment: Environment {
        get throws { try Environment(name: "legal", baseURL: baseURL, allowInsecureHTTP: true) }
    }

    private struct State {
        var behaviour: Behaviour
        var rows: [String: Row] = [:]
        var order: [String] = []
        var writes: Int64 = 0
        var tick: Int64 = 0
        var rng: SplitMix
        var requests: [String] = []
        var listings = 0
        var updatesDone = 0
    }

    private let state: Mutex<State>

    init(_ behaviour: Behaviour = Behaviour()) {
        state = Mutex(State(behaviour: behaviour, rng: SplitMix(seed: behaviour.seed)))
    }

    /// The switches, read or changed between requests.
    var behaviour: Behaviour {
        get { state.withLock { $0.behaviour } }
        set { state.withLock { $0.behaviour = newValue } }
    }

    /// The paths and queries asked for, in order.
    var requests: [String] { state.withLock { $0.requests } }

    /// The rows, by id (the deleted ones too when asked).
    func rows(includeDeleted: Bool = false) -> [String: Row] {
        state.withLock { s in s.rows.filter { includeDeleted || !$0.value.deleted } }
    }

    /// Adds `count` rows `r0000`, `r0001`… (after the ones there), each a write of the clock.
    func insert(count: Int, text: String = "row") {
        state.withLock { s in
            for _ in 0..<count { LegalServer.add(&s, text: text) }
        }
    }

    private static func add(_ s: inout State, text: String) {
        let id = String(format: "r%04d", s.order.count)
        let stamp = LegalServer.stamp(&s)
        s.rows[id] = Row(id: id, text: "\(text) \(id)", updatedAt: stamp, version: 1, deleted: false)
        s.order.append(id)
    }

    /// Another client's write, for ``Behaviour/writesBeforeListings``.
    enum Write: Sendable {
        /// The row's text rewritten (``update(_:text:)``).
        case update(String)
        /// One new row (``insert(count:text:)``).
        case insert
        /// The clock moved on (``advanceClock()``).
        case advanceClock
    }

    /// Rewrites a row's text (a new `updatedAt` from the clock, a new version).
    func update(_ id: String, text: String? = nil) {
        state.withLock { s in LegalServer.touch(&s, id, text: text, deleted: nil) }
    }

    /// Soft-deletes a row.
    func delete(_ id: String) {
        state.withLock { s in LegalServer.touch(&s, id, text: nil, deleted: true) }
    }

    /// Starts a new tick of the clock: the next write gets a later `updatedAt` than every one
    /// before (time passed between requests).
    func advanceClock() { state.withLock { s in LegalServer.newTick(&s) } }

    private static func touch(_ s: inout State, _ id: String, text: String?, deleted: Bool?) {
        guard var row = s.rows[id] else { return }
        row.updatedAt = stamp(&s)
        row.version += 1
        if let text { row.text = text }
        if let deleted { row.deleted = deleted }
        s.rows[id] = row
    }

    /// The clock: `rowsPerTick` writes per millisecond tick, from 2024-01-01.
    private static func stamp(_ s: inout State) -> Int64 {
        if s.writes > 0, s.writes % Int64(max(1, s.behaviour.rowsPerTick)) == 0 { s.tick += 1 }
        s.writes += 1
        return 1_704_067_200_000_000 + s.tick * 1000
    }

    private static func newTick(_ s: inout State) {
        s.tick += 1
        s.writes = 0
    }

    // MARK: HTTP

    func shutdown() {}

    func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead {
        let (head, body, behaviour) = answer(request)
        try receiver.receive(head: head)
        let size = behaviour.chunkSize ?? max(1, body.count)
        var sent = 0
        let idle = Duration.milliseconds(Int64(request.timeout * 1000))
        while sent < body.count {
            if let stall = behaviour.stallsAfter, sent >= stall {
                // Nothing more: the client's idle timeout ends the request, as URLSession's would.
                if behaviour.stallIgnoresCancel {
                    await sleepIgnoringCancel(idle)
                } else {
                    try await LegalServer.sleep(idle)
                }
                throw HTTPError(.transport, "the request timed out (no byte for \(request.timeout) s)")
            }
            var end = min(body.count, sent + size)
            if let stall = behaviour.stallsAfter, stall > sent { end = min(end, stall) }
            try body[sent..<end].withUnsafeBytes { try receiver.receive(chunk: $0) }
            sent = end
            if sent < body.count, (behaviour.chunkDelay > .zero) {
                guard behaviour.chunkDelay < idle else {
                    try await LegalServer.sleep(idle)
                    throw HTTPError(.transport, "the request timed out (no byte for \(request.timeout) s)")
                }
                try await LegalServer.sleep(behaviour.chunkDelay)
            }
        }
        return head
    }

    private static func sleep(_ duration: Duration) async throws {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw HTTPError(.cancelled, "the request was cancelled")
        }
    }

    /// A wait that only its time or ``releaseStalls()`` ends, each resuming it at most once.
    private final class Stall: Sendable {
        private let continuation = Mutex<CheckedContinuation<Void, Never>?>(nil)
        init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation.withLock { $0 = continuation } }
        func end() {
            continuation.withLock { c in
                defer { c = nil }; return c
            }?.resume()
        }
    }

    private let stalls = Mutex<[Stall]>([])

    private func sleepIgnoringCancel(_ duration: Duration) async {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let stall = Stall(continuation)
            stalls.withLock { $0.append(stall) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { stall.end() }
        }
    }

    /// Ends every stalled body that ignores its cancel (``Behaviour/stallIgnoresCancel``) now,
    /// as its idle timeout would: a test need not wait for them to close its device.
    func releaseStalls() {
        for stall in stalls.withLock({ s in
            defer { s = [] }; return s
        }) { stall.end() }
    }

    /// The answer to one request, decided under the lock.
    private func answer(_ request: HTTPRequest) -> (HTTPResponseHead, [UInt8], Behaviour) {
        state.withLock { s in
            let b = s.behaviour
            let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
            let path = components?.percentEncodedPath ?? ""
            let pathAndQuery = path + (components?.percentEncodedQuery.map { "?" + $0 } ?? "")
            s.requests.append(pathAndQuery)
            guard request.method == .get, path.contains("/tables/") else {
                return (HTTPResponseHead(status: 405), Array(#"{"error":"not served"}"#.utf8), b)
            }
            s.listings += 1
            for write in b.writesBeforeListings[s.listings] ?? [] {
                switch write {
                case .update(let id):
                    LegalServer.touch(&s, id, text: "written during listing \(s.listings)", deleted: nil)
                case .insert: LegalServer.add(&s, text: "row")
                case .advanceClock: LegalServer.newTick(&s)
                }
            }
            if b.failsListings.contains(s.listings) {
                return (HTTPResponseHead(status: 503), Array(#"{"error":"try later"}"#.utf8), b)
            }
            if let body = b.bodyOverride {
                return (
                    HTTPResponseHead(status: 200, headers: ["Content-Type": "application/json"]), Array(body.utf8), b
                )
            }
            var parameters: [String: String] = [:]
            for item in components?.queryItems ?? [] { parameters[item.name.lowercased()] = item.value ?? "" }
            // Rows updated while the client pages (a new tick: time passed since the last answer).
            if b.updatesPerRequest > 0, s.updatesDone < b.updateBudget, !s.order.isEmpty {
                LegalServer.newTick(&s)
                for _ in 0..<min(b.updatesPerRequest, b.updateBudget - s.updatesDone) {
                    let id = s.order[Int(s.rng.next() % UInt64(s.order.count))]
                    LegalServer.touch(&s, id, text: "updated \(s.updatesDone)", deleted: nil)
                    s.updatesDone += 1
                }
                LegalServer.newTick(&s)
            }
            let filter: ODataFilter?
            do {
                filter = try parameters["$filter"].map { try ODataFilter.parse($0) }
            } catch {
                return (HTTPResponseHead(status: 400), Array(#"{"error":"bad filter"}"#.utf8), b)
            }
            let includeDeleted = parameters["__includedeleted"]?.lowercased() == "true"
            var rows = s.order.compactMap { s.rows[$0] }.filter { row in
                (includeDeleted || !row.deleted) && (filter.map { LegalServer.matches(row, $0, b.protocol) } ?? true)
            }
            let terms = (parameters["$orderby"] ?? "").split(separator: ",").map { term in
                let words = term.split(separator: " ")
                return (
                    field: String(words.first ?? ""), descending: words.count > 1 && words[1].lowercased() == "desc"
                )
            }
            if b.shufflesTies { rows.shuffle(using: &s.rng) }
            rows = LegalServer.sorted(rows, by: terms)
            let skip = b.ignoresSkip ? 0 : Int(parameters["$skip"] ?? "") ?? 0
            let top = parameters["$top"].flatMap { Int($0) }
            let take = min(top ?? b.pageSize, b.pageCap ?? .max)
            let page = Array(rows.dropFirst(skip).prefix(take))
            let more = skip + page.count < rows.count && (top.map { $0 > page.count } ?? true) && !page.isEmpty
            var link: String?
            if b.selfLink {
                link = LegalServer.link(b.link, path: path, items: components?.percentEncodedQueryItems ?? [])
            } else if more {
                var items = (components?.percentEncodedQueryItems ?? []).filter {
                    !["$skip", "$top"].contains($0.name.lowercased())
                }
                items.append(URLQueryItem(name: "$skip", value: String(skip + page.count)))
                if let top { items.append(URLQueryItem(name: "$top", value: String(top - page.count))) }
                link = LegalServer.link(b.link, path: path, items: items)
            }
            let count =
                parameters["$count"]?.lowercased() == "true" || parameters["$inlinecount"]?.lowercased() == "allpages"
                ? rows.count : nil
            var writer = JSONWriter()
            var headers: HTTPHeaders = ["Content-Type": "application/json"]
            func items() {
                writer.beginArray()
                for row in page { LegalServer.write(row, b.protocol, &writer) }
                writer.endArray()
            }
            if b.protocol == .v3 {
                writer.beginObject()
                writer.key("items")
                items()
                writer.key("count")
                if let count { writer.number(count) } else { writer.null() }
                writer.key("nextLink")
                if let link, !b.linkInHeader { writer.string(link) } else { writer.null() }
                writer.endObject()
            } else if let count {
                writer.beginObject()
                writer.key("results")
                items()
                writer.key("count")
                writer.number(count)
                writer.endObject()
            } else {
                items()
            }
            if let link, b.linkInHeader { headers["Link"] = "<\(link)>; rel=next" }
            return (HTTPResponseHead(status: 200, headers: headers), writer.bytes, b)
        }
    }

    private static func link(_ form: Behaviour.Link, path: String, items: [URLQueryItem]) -> String? {
        let query = items.map { $0.name + "=" + ($0.value ?? "") }.joined(separator: "&")
        switch form {
        case .queryString: return query
        case .absolutePath: return path + "?" + query
        case .absoluteURL: return "http://legal.test" + path + "?" + query
        case .none: return nil
        }
    }

    static func timestamp(_ micros: Int64) -> String {
        TableTimestamp(seconds: micros / 1_000_000, nanoseconds: Int32(micros % 1_000_000) * 1000).formatted(.dotNet)
    }

    private static func write(_ row: Row, _ version: TableProtocol, _ writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id")
        writer.string(row.id)
        writer.key("text")
        writer.string(row.text)
        if version != .v3 {
            writer.key("createdAt")
            writer.string(timestamp(1_704_067_200_000_000))
        }
        writer.key("updatedAt")
        writer.string(timestamp(row.updatedAt))
        writer.key("version")
        writer.string("v\(row.version)")
        writer.key("deleted")
        writer.bool(row.deleted)
        writer.endObject()
    }

    // MARK: Filters and order

    private enum Value: Comparable {
        case null
        /// 0 or 1.
        case bool(Int)
        case number(Double)
        case date(Int64)
        case text(String)
    }

    private static func value(_ row: Row, _ field: String) -> Value {
        switch field {
        case "id": .text(row.id)
        case "text": .text(row.text)
        case "updatedAt", "__updatedAt": .date(row.updatedAt)
        case "deleted", "__deleted": .bool(row.deleted ? 1 : 0)
        case "version", "__version": .text("v\(row.version)")
        default: .null
        }
    }

    private static func value(_ row: Row, _ operand: ODataFilter) -> Value {
        switch operand {
        case .member(let name, _): return value(row, name)
        case .literal(let literal, _):
            switch literal {
            case .string(let s), .guid(let s), .date(let s), .timeOfDay(let s): return .text(s)
            case .integer(let n): return .number(Double(n))
            case .decimal(let text): return .number(Double(text) ?? 0)
            case .double(let d): return .number(d)
            case .bool(let b): return .bool(b ? 1 : 0)
            case .null: return .null
            case .dateTimeOffset(let micros): return .date(micros)
            }
        case .call(.tolower, let arguments, _):
            if case .text(let s) = value(row, arguments[0]) { return .text(s.lowercased()) }
            return .null
        case .call(.toupper, let arguments, _):
            if case .text(let s) = value(row, arguments[0]) { return .text(s.uppercased()) }
            return .null
        default:
            return .null
        }
    }

    private static func matches(_ row: Row, _ filter: ODataFilter, _ version: TableProtocol) -> Bool {
        switch filter {
        case .and(let terms): return terms.allSatisfy { matches(row, $0, version) }
        case .or(let terms): return terms.contains { matches(row, $0, version) }
        case .not(let a, _): return !matches(row, a, version)
        case .member, .literal: return value(row, filter) == .bool(1)
        case .call(let function, let arguments, _) where function.isCondition:
            guard case .text(let x) = value(row, arguments[0]), case .text(let y) = value(row, arguments[1]) else {
                return false
            }
            switch function {
            case .startswith: return x.hasPrefix(y)
            case .endswith: return x.hasSuffix(y)
            default: return x.contains(y)
            }
        case .isIn(let subject, let list, _):
            return list.contains { value(row, subject) == value(row, $0) }
        case .compare(let a, let op, let b, _) where a.isCondition || b.isCondition:
            let (condition, other) = a.isCondition ? (a, b) : (b, a)
            return (matches(row, condition, version) == (value(row, other) == .bool(1))) == (op == .eq)
        case .compare(let a, let op, let b, _):
            let (x, y) = (value(row, a), value(row, b))
            switch op {
            case .eq: return x == y
            case .ne: return x != y
            case .gt: return x > y
            case .ge: return x >= y
            case .lt: return x < y
            case .le: return x <= y
            }
        default:
            return false
        }
    }

    /// `rows` in the order of `terms`, a stable sort (ties keep the order they came in).
    private static func sorted(_ rows: [Row], by terms: [(field: String, descending: Bool)]) -> [Row] {
        guard !terms.isEmpty else { return rows }
        let keyed = rows.enumerated().map { (index: $0.offset, row: $0.element) }
        return keyed.sorted { a, b in
            for term in terms {
                let (x, y) = (value(a.row, term.field), value(b.row, term.field))
                if x != y { return term.descending ? x > y : x < y }
            }
            return a.index < b.index
        }.map(\.row)
    }
}

/// A small seeded generator (SplitMix64): the same seed, the same numbers.
struct SplitMix: RandomNumberGenerator, Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
