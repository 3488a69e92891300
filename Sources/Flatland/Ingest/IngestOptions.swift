import FlatlandJSON

/// How an ingest reads a response.
public struct IngestOptions: Sendable {
    /// What to do with an entity whose prefix has no registered type.
    public enum UnknownPrefixPolicy: Sendable {
        /// Keep it as an untyped entity (its fields as JSON). The default.
        case untyped
        /// Leave it out of the store; its object is read as a plain container.
        case ignore
        /// Fail the whole response.
        case fail
    }

    /// What to do with an entity that cannot be decoded (a wrong type in a field).
    public enum BadEntityPolicy: Sendable {
        /// Fail the whole response; the store stays as it was. The default.
        case failResponse
        /// Leave that entity out, keep the rest, and report it in ``IngestResult/skipped``.
        case skipAndReport
    }

    /// Decides which objects are entities. Default: ``PrefixedIDResolver`` on `"uuid"`.
    public var resolver: any IdentityResolver
    /// What to do with unknown prefixes.
    public var unknownPrefix: UnknownPrefixPolicy
    /// What to do with an entity that cannot be decoded.
    public var badEntity: BadEntityPolicy
    /// The member whose number is the data version of every entity (a type's own
    /// ``Entity/dataVersionKey`` wins). An entity not newer than the stored one is skipped.
    public var versionKey: String?
    /// The query parameters that do not change an endpoint's collection.
    public var ignoredParameters: Set<String>
    /// The parser's options and limits.
    public var parser: JSONParserOptions
    /// How many bytes of an object may be buffered while its identity is not known yet; past
    /// that it is read as a plain container. Bounds memory on objects that are not entities.
    public var maxPendingObjectBytes: Int
    /// How many positions an endpoint's collection may have: a slice whose `offset` plus its
    /// number of items goes past this fails the ingest with ``IngestError/Code-swift.struct/limit``.
    /// The collection keeps a slot for every position before its last one, so an offset a
    /// server got wrong (or a hostile one) must not decide how much memory it takes.
    public var maxCollectionLength: Int
    /// Whether the ingestor takes its fast way with a ``RuleResolver``: the first rule an
    /// object's position allows is worked out when the object opens, and one without a type key
    /// decides at its id. Tests and the fuzzer turn it off to compare with the general way.
    @_spi(Testing) public var allowsRuleFastPath = true
    /// How a page is wrapped (see ``Envelope``) at endpoints ``endpointEnvelopes`` says nothing
    /// of. Default: ``Envelope/default``.
    public var envelope: Envelope
    /// The envelopes of particular endpoints, declared once for a session or backend
    /// (`Backend.Configuration.ingestOptions`): the one whose path prefix is the longest to match
    /// a response's path wins (``envelope(forEndpoint:)``).
    ///
    /// ```swift
    /// options.endpointEnvelopes = [
    ///     EndpointEnvelope("/tables", .datasync),          // /tables/todoitem, /tables/x/y…
    ///     EndpointEnvelope("/search/issues", .cursor(items: "items", next: "next")),
    /// ]
    /// ```
    public var endpointEnvelopes: [EndpointEnvelope] = []

    /// One endpoint's envelope: every path equal to ``pathPrefix`` or below it (`/tables` covers
    /// `/tables/todoitem` and `/tables?x=1`, not `/tablesx`).
    public struct EndpointEnvelope: Sendable, Hashable {
        /// The path the endpoints start with, without a query.
        public var pathPrefix: String
        /// Their envelope.
        public var envelope: Envelope

        /// A declaration.
        public init(_ pathPrefix: String, _ envelope: Envelope) {
            self.pathPrefix = pathPrefix
            self.envelope = envelope
        }

        /// Whether `path` (no query) is this prefix's or below it.
        func covers(_ path: Substring) -> Bool {
            let prefix = pathPrefix.hasSuffix("/") ? Substring(pathPrefix.dropLast()) : Substring(pathPrefix)
            guard path.hasPrefix(prefix) else { return false }
            let rest = path.dropFirst(prefix.count)
            return rest.isEmpty || rest.first == "/"
        }
    }

    /// The envelope of the endpoint `pathAndQuery`: the declared one whose path prefix is the
    /// longest to cover its path, else ``envelope``.
    public func envelope(forEndpoint pathAndQuery: String?) -> Envelope {
        guard let pathAndQuery, !endpointEnvelopes.isEmpty else { return envelope }
        let path = pathAndQuery.prefix { $0 != "?" && $0 != "#" }
        var best: EndpointEnvelope?
        for declared in endpointEnvelopes where declared.covers(path) {
            if best.map({ declared.pathPrefix.count > $0.pathPrefix.count }) ?? true { best = declared }
        }
        return best?.envelope ?? envelope
    }
    /// What the caller knows of this response's page from outside its body.
    public var page: PageContext

    /// What the caller knows of a response's page from outside its body: its headers, or the
    /// page it follows.
    public struct PageContext: Sendable, Hashable {
        /// Where the page starts when neither the body nor the request's query says (see
        /// ``Envelope``): a pager that follows next links passes the previous page's
        /// ``IngestResult/Page/nextOffset``, so that the page comes right after it.
        public var start: Int?
        /// The number of items the endpoint has, from a header (`X-Total-Count`), when the body
        /// does not say.
        public var total: Int?
        /// The next page's link from a header (`Link: <…>; rel="next"`), when the body does not
        /// give one; reported in ``IngestResult/Page/nextLink``.
        public var nextLink: String?

        /// A context; every member is optional.
        public init(start: Int? = nil, total: Int? = nil, nextLink: String? = nil) {
            self.start = start
            self.total = total
            self.nextLink = nextLink
        }

        /// Whether the caller says anything of the page.
        var isEmpty: Bool { start == nil && total == nil && nextLink == nil }
    }

    /// A condition of this ingest alone, asked after the store's own (``StoreHooks/condition``)
    /// for each entity as its object ends: false leaves the entity out of the store and of the
    /// task's collection. (A sync pull leaves out the rows with local changes not yet pushed.)
    public var condition: (@Sendable (IncomingEntity) -> Bool)? = nil

    /// Whether the response updates its endpoint's collection (true by default). A sync pull's
    /// pages, each with its own filter, would otherwise leave one collection per page, every
    /// pulled id listed again in memory.
    public var updatesEndpointCollection = true

    /// Whether the store keeps the response's task collection (true by default). The commit's
    /// ``IngestResult/taskCollection`` is there either way; with false the store neither lists it
    /// nor writes it, and it does not count towards ``Store/taskCollectionLimit``. An offline
    /// sync's pages and answers, which no one looks up by task, would otherwise push the app's own
    /// task collections out: a 100,000-row pull is 2,000 requests.
    public var keepsTaskCollection = true

    /// Options; every argument has a default.
    public init(
        resolver: any IdentityResolver = PrefixedIDResolver(),
        unknownPrefix: UnknownPrefixPolicy = .untyped,
        badEntity: BadEntityPolicy = .failResponse,
        versionKey: String? = nil,
        ignoredParameters: Set<String> = Endpoint.defaultIgnoredParameters,
        parser: JSONParserOptions = .strict,
        maxPendingObjectBytes: Int = 1 << 20,
        maxCollectionLength: Int = 1 << 20,
        envelope: Envelope = .default,
        page: PageContext = PageContext()
    ) {
        self.resolver = resolver
        self.unknownPrefix = unknownPrefix
        self.badEntity = badEntity
        self.versionKey = versionKey
        self.ignoredParameters = ignoredParameters
        self.parser = parser
        self.maxPendingObjectBytes = maxPendingObjectBytes
        self.maxCollectionLength = maxCollectionLength
        self.envelope = envelope
        self.page = page
    }
}

/// Why a response could not be ingested: what, and where.
public struct IngestError: Error, CustomStringConvertible {
    /// What kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The bytes are not valid JSON, or exceed a limit: see ``IngestError/json``.
        public static let json = Code(name: "json")
        /// A field's value has the wrong type or cannot be converted.
        public static let decoding = Code(name: "decoding")
        /// An entity's prefix has no type and the policy is ``IngestOptions/UnknownPrefixPolicy/fail``.
        public static let unknownPrefix = Code(name: "unknownPrefix")
        /// The response goes past one of the limits in ``IngestOptions``: a slice beyond
        /// ``IngestOptions/maxCollectionLength``.
        public static let limit = Code(name: "limit")
        /// The ingest was cancelled.
        public static let cancelled = Code(name: "cancelled")
        /// The ingestor was used after it finished, or a batch was committed twice or to a store
        /// of another registry.
        public static let misuse = Code(name: "misuse")
        /// The response was read, but the store could not commit it: its persistence failed to
        /// write (``IngestError/underlying`` is the persistence's own error, FlatlandSQLite's
        /// `SQLiteStoreError`). The store is unchanged.
        public static let persistence = Code(name: "persistence")
        /// A page's paging member (offset, count, total, next link) or paging query parameter
        /// is malformed: negative, fractional, a string where a number belongs.
        public static let paging = Code(name: "paging")
        public var description: String { name }
    }

    /// What kind of failure.
    public var code: Code
    /// A sentence for people.
    public var message: String
    /// Where in the response: byte offset, line and column.
    public var location: JSONLocation?
    /// The JSON path of the value at fault: `$.data[3].age`.
    public var path: String?
    /// The parser's error, for ``Code-swift.struct/json``.
    public var json: JSONError?
    /// The error beneath, for ``Code-swift.struct/persistence``: the persistence's own error
    /// (FlatlandSQLite's `SQLiteStoreError`).
    public var underlying: (any Error & Sendable)?

    public var description: String {
        var text = ""
        if let location { text += "\(location.line):\(location.column): " }
        if let path { text += "\(path): " }
        return text + message
    }
}

extension IngestError {
    /// The error of a store's commit of an ingest: ``Code-swift.struct/persistence`` when its
    /// persistence failed, ``Code-swift.struct/misuse`` for a write from inside a commit.
    init(committing error: any Error) {
        switch error {
        case let error as IngestError:
            self = error
        case let error as StoreWriteError where error.code == .persistence:
            self.init(
                code: .persistence, message: "the store could not be written: \(error)",
                underlying: error.underlying ?? error)
        case let error as StoreWriteError where error.code == .transactionWork:
            self.init(
                code: .persistence, message: "the work alongside the commit failed: \(error)", underlying: error)
        default:
            self.init(code: .misuse, message: "the store could not be written: \(error)", underlying: error)
        }
    }
}

/// What one ingest did.
public struct IngestResult: Sendable {
    /// The task's collection: the top-level entities of the response, in document order.
    public var taskCollection: EntityCollection
    /// The endpoint's collection after this response, when the ingest had an endpoint.
    public var endpointCollection: EntityCollection?
    /// The changes applied to the store.
    public var changes: ChangeSet
    /// Entities left out under ``IngestOptions/BadEntityPolicy/skipAndReport``.
    public var skipped: [IngestError]
    /// Bytes read.
    public var bytes: Int
    /// The page this response was, when it was one (see ``Envelope``): where it sits in the
    /// endpoint's collection and where the next one is.
    public var page: Page? = nil

    /// A page of a paginated endpoint, as one response delivered it.
    public struct Page: Sendable, Hashable {
        /// The position of the page's first item in the endpoint's collection.
        public var offset: Int
        /// The number of items in the page (its items array's length).
        public var count: Int
        /// The number of items the endpoint has, when the page (or the caller) said.
        public var total: Int?
        /// The link (or cursor) to the next page, from the body or the caller; nil on the last
        /// page.
        public var nextLink: String?

        /// Where the next page starts: pass it as ``IngestOptions/PageContext/start`` when
        /// following ``nextLink``.
        public var nextOffset: Int { offset + count }

        /// A page; for comparing with what an ingest reported.
        public init(offset: Int, count: Int, total: Int?, nextLink: String?) {
            self.offset = offset
            self.count = count
            self.total = total
            self.nextLink = nextLink
        }
    }
}
