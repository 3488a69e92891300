@_spi(FlatlandInternal) import FlatlandJSON

/// The one recursive, streaming walk from parser events to store changes.
///
/// Feed it a response in chunks as it arrives, then call ``finish()``: it hands back the whole
/// response as one ``IngestBatch``, which ``Store/commit(_:removing:alongside:)`` applies to the store, all of it or
/// nothing. (``Store/ingest(_:endpoint:taskID:options:)`` does both.) The ingestor writes nothing
/// itself: it reads only the store's registry, its condition hook and, for versioned entities, the
/// stored data versions. Any shape works without per-endpoint code: a plain object, an array, a
/// page in a declared ``Envelope`` (by default `{"offset":12,"count":2,"total":47,"data":[…]}`),
/// entities nested in entities.
///
/// Objects with an identity (see ``IdentityResolver``) are entities: their fields are decoded
/// straight into a draft as the events arrive, and the draft is merged into the store's record
/// at the end (partial update: absent keys keep their value). Entities nested in an entity are
/// stored as records of their own and the parent keeps their id. Other objects are containers
/// whose values are scanned for entities.
///
/// Key order does not matter. Until an object's identity is known, its children are read as
/// they come (nested entities are stored at once) and its own members are kept on a tape, with
/// nested entities as references; if the object turns out to be an entity, its members are
/// decoded from the tape, otherwise the tape is dropped. An object that grows past
/// ``IngestOptions/maxPendingObjectBytes`` before its identity is known is read as a container,
/// so memory for the walk is bounded by the largest single entity, not by the response.
public final class Ingestor {
    let context: IngestContext
    let options: IngestOptions
    /// The non-fielded endpoint, when the response came from one.
    public let endpoint: String?
    let taskID: String?
    var parser: JSONStreamParser!
    let frames = FrameStack<Frame>()
    @exclusivity(unchecked) var tape = EventTape()
    @exclusivity(unchecked) var batch = PendingBatch()
    @exclusivity(unchecked) var skipped: [IngestError] = []
    var failure: IngestError?
    var finished = false
    var cancelled = false
    let identityKeys: [[UInt8]]
    let identityKeyNames: [String]
    let idKey: [UInt8]?
    /// Whether the options' version key is the id key.
    let idKeyIsVersionKey: Bool
    let prefixedIDs: Bool
    /// Whether every object may be an entity (the resolver has no static rules).
    let mayIdentifyAll: Bool
    let versionKey: [UInt8]?
    /// Whether any key may be a data version key (the options' or a registered type's).
    let looksForVersionKeys: Bool
    /// The id key's length in bytes (-1 without one).
    let idKeyLength: Int
    /// The bytes of the current unknown member's key in the top entity frame.
    @exclusivity(unchecked) var unknownKey = KeyBuffer()
    /// The bytes of the innermost object's current key, until it has to be text.
    @exclusivity(unchecked) var pendingKey = KeyBuffer()
    let registry: EntityRegistry
    /// The registered types, for matching id prefixes without a lookup.
    let knownTypes: [EntityType]
    /// The resolver, when it is the built-in rule resolver (matched without a candidate).
    let rules: RuleResolver?
    /// That resolver's answer to whether an object may be an entity, for this endpoint.
    let parentKeyFilter: ParentKeyFilter?
    /// Per rule of that resolver: when the rule has no type key and its prefix a registered
    /// type, an object it lets through first is that type's entity as soon as its id arrives.
    let directRules: [DirectRule?]
    /// Where such an id is put together, `<prefix>-<value>`.
    @exclusivity(unchecked) var idScratch = KeyBuffer()

    struct DirectRule {
        /// `<prefix>-`.
        let prefix: [UInt8]
        /// The rule's id key, as an index into the identity keys.
        let idKey: Int
        /// The prefix's type, unretained (the registry keeps every type alive).
        let type: Unretained<EntityType>
    }
    /// The one token of a scalar handed to a field decoder.
    let scalarToken = UnsafeMutablePointer<TapeToken>.allocate(capacity: 1)
    /// The type of the last id matched, unretained (the registry keeps every type alive).
    @exclusivity(unchecked) var lastType: Unretained<EntityType>?
    /// The store's condition hook.
    let condition: (@Sendable (IncomingEntity) -> Bool)?
    /// The envelope's items member, when it is one.
    let itemsKey: String?
    /// The envelope's paging members, by name.
    let pagingKeys: [(member: PagingMember, name: [UInt8])]
    /// Bit `n` set when a paging member's name is `n` bytes long (63 for longer ones): most keys
    /// are ruled out by their length alone.
    let pagingKeyLengths: UInt64
    /// Where the page starts according to the request or the caller (see ``Envelope``).
    private(set) var requestStart: Int?
    /// Where the request's query says the page starts, if it says.
    let queryStart: Int?
    /// Whether a root object with the items member is a page without a paging member.
    private(set) var rootIsPage: Bool
    /// Whether a later object for an id already in the batch may be decoded straight into its
    /// draft: the same result as folding a draft of its own into it, when no data version is
    /// compared, no condition judges each object and a bad entity fails the whole response.
    let mergeInPlace: Bool

    init(context: IngestContext, endpoint rawEndpoint: String?, taskID: String?, options given: IngestOptions) {
        self.context = context
        // The envelope declared for this endpoint, if one is, stands for the default one.
        var options = given
        options.envelope = given.envelope(forEndpoint: rawEndpoint)
        self.options = options
        let query = rawEndpoint.map(Endpoint.Query.init)
        let endpoint = query?.nonFielded(ignoring: options.ignoredParameters)
        self.endpoint = endpoint
        self.taskID = taskID
        registry = context.registry
        switch (context.condition, options.condition) {
        case (let store?, let own?): condition = { store($0) && own($0) }
        case (let store, let own): condition = store ?? own
        }
        rules = options.resolver as? RuleResolver
        let types = context.registry.types
        knownTypes = types.keys.sorted().compactMap { types[$0] }
        identityKeyNames = options.resolver.identityKeys
        identityKeys = identityKeyNames.map { Array($0.utf8) }
        idKey = options.resolver.idKey.map { Array($0.utf8) }
        prefixedIDs = options.resolver is PrefixedIDResolver
        mayIdentifyAll = prefixedIDs
        let ruleFastPath = options.allowsRuleFastPath ? rules : nil
        parentKeyFilter = ruleFastPath.map { ParentKeyFilter($0, endpoint: endpoint) }
        directRules =
            ruleFastPath.map { rules in
                zip(rules.rules, rules.keyIndexes).map { rule, keys in
                    guard rule.typeKey == nil, let type = context.registry.type(forPrefix: rule.prefix) else {
                        return nil
                    }
                    return DirectRule(
                        prefix: Array("\(rule.prefix)-".utf8), idKey: keys.id, type: Unretained(type))
                }
            } ?? []
        versionKey = options.versionKey.map { Array($0.utf8) }
        idKeyIsVersionKey = versionKey == idKey
        looksForVersionKeys = options.versionKey != nil || types.values.contains { $0.dataVersionKeyBytes != nil }
        idKeyLength = idKey?.count ?? -1
        mergeInPlace =
            options.versionKey == nil && options.badEntity == .failResponse && condition == nil
        let envelope = options.envelope
        itemsKey = envelope.items
        let names = envelope.memberNames
        pagingKeys = [PagingMember.offset, .count, .total, .nextLink].compactMap { member in
            names[Int(member.rawValue)].map { (member, Array($0.utf8)) }
        }
        pagingKeyLengths = pagingKeys.reduce(0) { $0 | 1 << UInt64(min($1.name.count, 63)) }
        var start: Int?
        do throws(IngestError) {
            start = try query.flatMap { query throws(IngestError) in try envelope.requestStart(query) }
        } catch {
            failure = error
        }
        queryStart = start
        requestStart = start ?? options.page.start
        rootIsPage = !envelope.requiresPagingMember || requestStart != nil
        pageContext = options.page
        parser = JSONStreamParser(handler: IngestorEvents(self), options: options.parser)
        batch.tallies = context.isEmptyInMemory
        batch.selectsFields = query?.selectsFields ?? false
    }

    deinit {
        scalarToken.deallocate()
    }

    /// What the caller knows of this response's page from outside its body; from
    /// ``IngestOptions/page`` at first. Set it from the response's headers (a `Link` header's next
    /// link, `X-Total-Count`) before the first byte of the body is fed; later changes are ignored.
    public var pageContext: IngestOptions.PageContext {
        didSet {
            guard parser.bytesConsumed == 0 else {
                pageContext = oldValue
                return
            }
            requestStart = queryStart ?? pageContext.start
            rootIsPage = !options.envelope.requiresPagingMember || requestStart != nil
        }
    }

    /// Bytes read so far.
    public var bytesConsumed: Int { parser.bytesConsumed }

    /// Reads the next chunk of the response.
    /// - Throws: ``IngestError`` (nothing is applied to the store).
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(IngestError) {
        try check()
        do throws(JSONError) { try parser.feed(bytes) } catch { throw fail(error) }
    }

    /// Reads the next chunk of the response from any byte sequence.
    public func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) throws(IngestError) {
        try check()
        do throws(JSONError) { try parser.feed(bytes) } catch { throw fail(error) }
    }

    /// Ends the response and hands it back as one batch, for ``Store/commit(_:removing:alongside:)``.
    /// - Throws: ``IngestError``; nothing is then handed back, and the store never sees any of
    ///   the response.
    public func finish() throws(IngestError) -> IngestBatch {
        try check()
        do throws(JSONError) { try parser.finish() } catch { throw fail(error) }
        finished = true
        var taken = PendingBatch()
        swap(&taken, &batch)
        return IngestBatch(
            pending: taken, registry: registry, taskID: taskID,
            endpoint: options.updatesEndpointCollection ? endpoint : nil, skipped: skipped,
            bytes: parser.bytesConsumed, keepsTaskCollection: options.keepsTaskCollection)
    }

    /// Stops the ingest: the next call (or the handler, mid-chunk) fails with
    /// ``IngestError/Code-swift.struct/cancelled``, and nothing is applied.
    public func cancel() { cancelled = true }

    func check() throws(IngestError) {
        if let failure { throw failure }
        if cancelled { throw fail(IngestError(code: .cancelled, message: "ingest cancelled")) }
        if finished { throw IngestError(code: .misuse, message: "the ingestor has already finished") }
    }

    func fail(_ error: IngestError) -> IngestError {
        failure = error
        return error
    }

    func fail(_ error: JSONError) -> IngestError {
        var result: IngestError
        if let inner = error.underlying as? IngestError {
            result = inner
        } else if error.code == .cancelled {
            result = IngestError(code: .cancelled, message: "ingest cancelled")
        } else {
            result = IngestError(code: .json, message: error.message, json: error)
        }
        result.location = error.location
        return fail(result)
    }

}
