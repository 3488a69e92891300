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

    /// Options; every argument has a default.
    public init(
        resolver: any IdentityResolver = PrefixedIDResolver(),
        unknownPrefix: UnknownPrefixPolicy = .untyped,
        badEntity: BadEntityPolicy = .failResponse,
        versionKey: String? = nil,
        ignoredParameters: Set<String> = Endpoint.defaultIgnoredParameters,
        parser: JSONParserOptions = .strict,
        maxPendingObjectBytes: Int = 1 << 20,
        maxCollectionLength: Int = 1 << 20
    ) {
        self.resolver = resolver
        self.unknownPrefix = unknownPrefix
        self.badEntity = badEntity
        self.versionKey = versionKey
        self.ignoredParameters = ignoredParameters
        self.parser = parser
        self.maxPendingObjectBytes = maxPendingObjectBytes
        self.maxCollectionLength = maxCollectionLength
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
        /// The ingestor was used after it finished.
        public static let misuse = Code(name: "misuse")
        /// The response was read, but the store could not commit it: its persistence failed to
        /// write (``IngestError/underlying`` is the persistence's own error, FlatlandSQLite's
        /// `SQLiteStoreError`). The store is unchanged.
        public static let persistence = Code(name: "persistence")
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
}
