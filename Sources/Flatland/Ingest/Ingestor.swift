import FlatlandJSON

/// The one recursive, streaming walk from parser events to store changes.
///
/// Feed it a response in chunks as it arrives, then call ``finish()``: the whole response is
/// applied to the store as one batch, or, if anything fails, not at all. Any shape works without
/// per-endpoint code: a plain object, an array, a paginated slice
/// `{"offset":12,"count":2,"total":47,"data":[…]}`, an envelope, entities nested in entities.
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
    enum Kind: UInt8 { case object, array, entity }

    /// What the parent does with a frame's result.
    enum Role: UInt8 {
        /// The document's root value, a member of a container, or an element of an array.
        case member
        /// An element of a slice's `data` array.
        case sliceElement
        /// The value of an entity's field: delivered to the entity.
        case field
    }

    struct Frame: ReusableFrame {
        var kind: Kind
        var role: Role
        /// Inside an entity, or inside an object whose identity is not known yet.
        var nested: Bool
        /// Whether this frame's events go on the tape.
        var records: Bool
        /// Objects: identity not known yet.
        var undecided = false
        /// Inside an entity (not only inside an undecided object).
        var inEntity: Bool
        var parentKey: String?
        /// The current member's key, where it has to be known as text.
        var key: String?
        /// Objects: the current member's key is still only bytes, in the ingestor's `pendingKey`
        /// (only the innermost frame's can be: a child's frame makes it text first).
        var keyPending = false
        /// Arrays: the current element's index.
        var index = 0
        /// Where this frame's own tokens start on the tape.
        var mark = EventTape.Mark(tokens: 0, bytes: 0)
        /// Undecided objects: which identity key's value comes next (-1 none).
        var identityKey = -1
        var firstIDValue: String?
        var otherIDValues: [String?] = []
        /// Undecided objects: the first rule of the ingest's ``RuleResolver`` that the object's
        /// position allows (-1 none, or not a rule resolver).
        var firstRule = -1
        /// Undecided objects: entities that end up top-level if this object is a container.
        var provisionalItems: [RecordKey] = []
        var provisionalSlice: PendingBatch.Slice?
        /// Entity frames.
        var draft: EntityBox?
        /// Entity frames: the draft's type, unretained (the registry keeps every type alive).
        var type: Unmanaged<EntityType>?
        /// The draft is one the batch already holds for this id, decoded into again.
        var reused = false
        /// Typed field index; or -1 not a field, -2 the id member, -3 an untyped member (`key`).
        var field = -1
        var lastField = -1
        var isVersion = false
        var failed = false
        /// Objects: the slice members seen.
        var offset: Int?
        var count: Int?
        var total: Int?
        var sliceItems: [(index: Int, id: String?)]?
        /// Arrays: whether this is a slice's `data` array.
        var isSliceData = false

        private init() {
            kind = .object
            role = .member
            nested = false
            inEntity = false
            records = false
        }

        static var blank: Frame { Frame() }

        /// Makes this (reused) frame a new one: every member set as a new frame's, references
        /// released only where they are set.
        @inline(__always)
        mutating func reset(kind: Kind, role: Role, nested: Bool, inEntity: Bool, records: Bool, parentKey: String?) {
            self.kind = kind
            self.role = role
            self.nested = nested
            self.records = records
            undecided = false
            self.inEntity = inEntity
            self.parentKey = parentKey
            if key != nil { key = nil }
            keyPending = false
            index = 0
            mark = EventTape.Mark(tokens: 0, bytes: 0)
            identityKey = -1
            firstRule = -1
            if firstIDValue != nil { firstIDValue = nil }
            if !otherIDValues.isEmpty { otherIDValues.removeAll(keepingCapacity: true) }
            // (Emptied, its storage kept: the slot's next undecided object is likely to need it.)
            if !provisionalItems.isEmpty { provisionalItems.removeAll(keepingCapacity: true) }
            if provisionalSlice != nil { provisionalSlice = nil }
            if draft != nil { draft = nil }
            type = nil
            reused = false
            field = -1
            lastField = -1
            isVersion = false
            failed = false
            offset = nil
            count = nil
            total = nil
            if sliceItems != nil { sliceItems = nil }
            isSliceData = false
        }
    }

    let store: Store
    let options: IngestOptions
    /// The non-fielded endpoint, when the response came from one.
    public let endpoint: String?
    let taskID: String?
    private var parser: JSONStreamParser!
    private let frames = FrameStack<Frame>()
    @exclusivity(unchecked) private var tape = EventTape()
    @exclusivity(unchecked) private var batch = PendingBatch()
    @exclusivity(unchecked) private var skipped: [IngestError] = []
    private var failure: IngestError?
    private var finished = false
    private var cancelled = false
    private let identityKeys: [[UInt8]]
    private let identityKeyNames: [String]
    private let idKey: [UInt8]?
    /// Whether the options' version key is the id key.
    private let idKeyIsVersionKey: Bool
    private let prefixedIDs: Bool
    /// Whether every object may be an entity (the resolver has no static rules).
    private let mayIdentifyAll: Bool
    private let versionKey: [UInt8]?
    /// Whether any key may be a data version key (the options' or a registered type's).
    private let looksForVersionKeys: Bool
    /// The id key's length in bytes (-1 without one).
    private let idKeyLength: Int
    /// The bytes of the current unknown member's key in the top entity frame.
    @exclusivity(unchecked) private var unknownKey = KeyBuffer()
    /// The bytes of the innermost object's current key, until it has to be text.
    @exclusivity(unchecked) private var pendingKey = KeyBuffer()
    private let registry: EntityRegistry
    /// The registered types, for matching id prefixes without a lookup.
    private let knownTypes: [EntityType]
    /// The resolver, when it is the built-in rule resolver (matched without a candidate).
    private let rules: RuleResolver?
    /// That resolver's answer to whether an object may be an entity, for this endpoint.
    private let parentKeyFilter: ParentKeyFilter?
    /// Per rule of that resolver: when the rule has no type key and its prefix a registered
    /// type, an object it lets through first is that type's entity as soon as its id arrives.
    private let directRules: [DirectRule?]
    /// Where such an id is put together, `<prefix>-<value>`.
    @exclusivity(unchecked) private var idScratch = KeyBuffer()

    struct DirectRule {
        /// `<prefix>-`.
        let prefix: [UInt8]
        /// The rule's id key, as an index into the identity keys.
        let idKey: Int
        /// The prefix's type, unretained (the registry keeps every type alive).
        let type: Unmanaged<EntityType>
    }
    /// The one token of a scalar handed to a field decoder.
    private let scalarToken = UnsafeMutablePointer<TapeToken>.allocate(capacity: 1)
    /// The type of the last id matched, unretained (the registry keeps every type alive).
    @exclusivity(unchecked) private var lastType: Unmanaged<EntityType>?
    /// Whether a later object for an id already in the batch may be decoded straight into its
    /// draft: the same result as folding a draft of its own into it, when no data version is
    /// compared, no condition judges each object and a bad entity fails the whole response.
    private let mergeInPlace: Bool

    init(store: Store, endpoint: String?, taskID: String?, options: IngestOptions) {
        self.store = store
        self.options = options
        let endpoint = endpoint.map { Endpoint.nonFielded($0, ignoring: options.ignoredParameters) }
        self.endpoint = endpoint
        self.taskID = taskID
        registry = store.registry
        rules = options.resolver as? RuleResolver
        let types = store.registry.types
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
                    guard rule.typeKey == nil, let type = store.registry.type(forPrefix: rule.prefix) else {
                        return nil
                    }
                    return DirectRule(
                        prefix: Array("\(rule.prefix)-".utf8), idKey: keys.id, type: .passUnretained(type))
                }
            } ?? []
        versionKey = options.versionKey.map { Array($0.utf8) }
        idKeyIsVersionKey = versionKey == idKey
        looksForVersionKeys = options.versionKey != nil || types.values.contains { $0.dataVersionKeyBytes != nil }
        idKeyLength = idKey?.count ?? -1
        mergeInPlace =
            options.versionKey == nil && options.badEntity == .failResponse && store.hooks.condition == nil
        parser = JSONStreamParser(handler: IngestorEvents(self), options: options.parser)
        batch.tallies = store.isEmptyInMemory
    }

    deinit {
        scalarToken.deallocate()
        unknownKey.deallocate()
        pendingKey.deallocate()
        idScratch.deallocate()
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

    /// Ends the response and applies it to the store as one batch.
    /// - Throws: ``IngestError``; the store is then exactly as it was.
    public func finish() throws(IngestError) -> IngestResult {
        try check()
        do throws(JSONError) { try parser.finish() } catch { throw fail(error) }
        finished = true
        do {
            // The batch is handed over: an empty store may take its drafts as its records.
            defer { batch = PendingBatch() }
            var result = try store.apply(&batch, taskID: taskID, endpoint: endpoint)
            result.skipped = skipped
            result.bytes = parser.bytesConsumed
            return result
        } catch {
            throw IngestError(committing: error)
        }
    }

    /// Stops the ingest: the next call (or the handler, mid-chunk) fails with
    /// ``IngestError/Code-swift.struct/cancelled``, and nothing is applied.
    public func cancel() { cancelled = true }

    private func check() throws(IngestError) {
        if let failure { throw failure }
        if cancelled { throw fail(IngestError(code: .cancelled, message: "ingest cancelled")) }
        if finished { throw IngestError(code: .misuse, message: "the ingestor has already finished") }
    }

    private func fail(_ error: IngestError) -> IngestError {
        failure = error
        return error
    }

    private func fail(_ error: JSONError) -> IngestError {
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

    // MARK: Events (from the parser only, through ``IngestorEvents``)

    func beginObject() throws {
        if cancelled { throw CancellationError() }
        guard let t = frames.lastIndex else {
            pushObject(role: .member, nested: false, inEntity: false, records: false, parentKey: nil)
            return
        }
        switch frames[t].kind {
        case .object:
            pushObject(
                role: .member, nested: frames[t].nested || frames[t].undecided, inEntity: frames[t].inEntity,
                records: frames[t].records, parentKey: objectKey(t))
        case .array:
            pushObject(
                role: frames[t].isSliceData ? .sliceElement : .member, nested: frames[t].nested,
                inEntity: frames[t].inEntity, records: frames[t].records, parentKey: frames[t].parentKey)
        case .entity:
            let isField = frames[t].field >= 0 || frames[t].field == -3
            pushObject(
                role: isField ? .field : .member, nested: true, inEntity: true, records: isField,
                parentKey: childKey(t))
        }
    }

    func beginArray() throws {
        pushArray()
        let t = frames.count - 1
        frames[t].mark = tape.mark
        if frames[t].records { tape.append(.beginArray) }
    }

    /// Opens the frame of an array that begins in the innermost frame.
    private func pushArray() {
        guard let p = frames.lastIndex else {
            let t = frames.pushSlot()
            frames[t].reset(kind: .array, role: .member, nested: false, inEntity: false, records: false, parentKey: nil)
            return
        }
        switch frames[p].kind {
        case .object:
            let key = objectKey(p)
            let isSliceData = !frames[p].inEntity && key == "data"
            let (nested, inEntity, records) = (
                frames[p].nested || frames[p].undecided, frames[p].inEntity, frames[p].records
            )
            let t = frames.pushSlot()
            frames[t].reset(
                kind: .array, role: .member, nested: nested, inEntity: inEntity, records: records, parentKey: key)
            frames[t].isSliceData = isSliceData
            if isSliceData { frames[t].sliceItems = [] }
        case .array:
            let role: Role = frames[p].isSliceData ? .sliceElement : .member
            let (nested, inEntity, records, parentKey) = (
                frames[p].nested, frames[p].inEntity, frames[p].records, frames[p].parentKey
            )
            let t = frames.pushSlot()
            frames[t].reset(
                kind: .array, role: role, nested: nested, inEntity: inEntity, records: records, parentKey: parentKey)
        case .entity:
            let isField = frames[p].field >= 0 || frames[p].field == -3
            let key = childKey(p)
            let t = frames.pushSlot()
            frames[t].reset(
                kind: .array, role: isField ? .field : .member, nested: true, inEntity: true, records: isField,
                parentKey: key)
        }
    }

    func endArray() throws {
        frames.pop()
        if frames.popped.records { tape.append(.endArray) }
        if frames.popped.isSliceData, let p = frames.lastIndex {
            // Moved, not shared: the popped frame's copy would make the parent's next append copy.
            frames[p].sliceItems = frames.popped.sliceItems.take()
        }
        try childEnded(role: frames.popped.role, mark: frames.popped.mark, id: nil)
    }

    func endObject() throws {
        let t = frames.count - 1
        if frames[t].undecided { try decide(t, atEnd: true) }
        if frames[t].kind == .entity { return try entityEnded() }
        frames.pop()
        if frames.popped.records { tape.append(.endObject) }
        if frames.popped.sliceItems != nil, !frames.popped.inEntity,
            frames.popped.offset != nil || frames.popped.count != nil || frames.popped.total != nil,
            let items = frames.popped.sliceItems.take()
        {
            let offset = frames.popped.offset ?? 0
            if offset > options.maxCollectionLength - items.count {
                throw IngestError(
                    code: .limit,
                    message:
                        "a slice of \(items.count) items at offset \(offset) goes past the \(options.maxCollectionLength) positions an endpoint's collection may have",
                    path: path(through: frames.count - 1))
            }
            offerSlice(PendingBatch.Slice(offset: offset, total: frames.popped.total, items: items))
        }
        try childEnded(role: frames.popped.role, mark: frames.popped.mark, id: nil)
    }

    func key(_ key: JSONBytes) throws {
        let t = frames.count - 1
        switch frames[t].kind {
        case .object:
            if frames[t].records {
                tape.append(.key, key.buffer)
                if tape.byteCount > options.maxPendingObjectBytes { forceContainers() }
            }
            // Made text only if a child or a path needs it: most keys are followed by a scalar.
            if frames[t].key != nil { frames[t].key = nil }
            frames[t].keyPending = true
            pendingKey.set(key.buffer)
            if frames[t].undecided {
                frames[t].identityKey =
                    identityKeys.firstIndex { bytes in bytes.withUnsafeBytes { key.equals($0) } } ?? -1
            }
        case .entity:
            entityKey(t, key.buffer)
        case .array:
            break
        }
    }

    @inline(__always)
    private func isIDKey(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let idKey else { return false }
        return idKey.withUnsafeBytes { JSONBytes(unsafeBuffer: key).equals($0) }
    }

    private func entityKey(_ t: Int, _ key: UnsafeRawBufferPointer) {
        // The usual key: the next declared field of a typed entity, where no version key is
        // looked for and the key is not the id's.
        var hint = frames[t].lastField &+ 1
        if !looksForVersionKeys, let type = frames[t].type {
            // (A type may declare a field under the id's key: the id wins, below.)
            if type._withUnsafeGuaranteedRef({ $0.isField(hint, named: key) }),
                key.count != idKeyLength || !isIDKey(key)
            {
                frames[t].field = hint
                frames[t].lastField = hint
                return
            }
            hint = .max  // tried: the table is next
        }
        // The type's own version key wins over the one in the options. (`type` is the draft's
        // type, unretained.)
        if !looksForVersionKeys {
            frames[t].isVersion = false
        } else if let own = frames[t].type?._withUnsafeGuaranteedRef({ $0.dataVersionKeyBytes }) {
            frames[t].isVersion = own.withUnsafeBytes { JSONBytes(unsafeBuffer: key).equals($0) }
        } else if let versionKey {
            frames[t].isVersion = versionKey.withUnsafeBytes { JSONBytes(unsafeBuffer: key).equals($0) }
        } else {
            frames[t].isVersion = false
        }
        if key.count == idKeyLength, isIDKey(key) {
            frames[t].field = -2
        } else if let type = frames[t].type {
            if let i = type._withUnsafeGuaranteedRef({ $0.fieldIndex(JSONBytes(unsafeBuffer: key), hint: hint) }) {
                frames[t].field = i
                frames[t].lastField = i
            } else {
                frames[t].field = -1
                if frames[t].key != nil { frames[t].key = nil }
                unknownKey.set(key)
            }
        } else {
            frames[t].field = -3
            frames[t].key = String(parsedUTF8: key)
        }
    }

    func string(_ value: JSONBytes) throws { try scalar(.string, value.buffer) }
    func number(_ value: JSONNumberText) throws { try scalar(.number, value.bytes.buffer) }
    func bool(_ value: Bool) throws {
        try scalar(value ? .true : .false, UnsafeRawBufferPointer(start: nil, count: 0))
    }
    func null() throws { try scalar(.null, UnsafeRawBufferPointer(start: nil, count: 0)) }

    private func scalar(_ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer) throws {
        guard let t = frames.lastIndex else { return }
        switch frames[t].kind {
        case .object:
            if frames[t].records { tape.append(kind, bytes) }
            if kind == .number, !frames[t].inEntity {
                func value() -> Int? { Int(exactly: (try? JSONNumberText(unsafeBuffer: bytes).int64()) ?? -1) }
                if keyEquals(t, "offset") {
                    frames[t].offset = value()
                } else if keyEquals(t, "count") {
                    frames[t].count = value()
                } else if keyEquals(t, "total") {
                    frames[t].total = value()
                }
            }
            let k = frames[t].identityKey
            if frames[t].undecided, k >= 0 {
                frames[t].identityKey = -1
                if kind == .string || kind == .number { try identityValue(t, k, bytes) }
            }
        case .array:
            if frames[t].records { tape.append(kind, bytes) }
            let index = frames[t].index
            if frames[t].isSliceData { frames[t].sliceItems?.append((index, nil)) }
            frames[t].index = index + 1
        case .entity:
            try entityScalar(t, kind, bytes)
        }
    }

    private func entityScalar(_ t: Int, _ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer) throws {
        if frames[t].failed { return }
        if frames[t].isVersion, kind == .number {
            frames[t].draft?.dataVersion = try? JSONNumberText(unsafeBuffer: bytes).double()
        }
        let field = frames[t].field
        if field >= 0 || field == -3 {
            try deliverScalar(kind, bytes, to: t)
        }
    }

    private func identityValue(_ t: Int, _ k: Int, _ bytes: UnsafeRawBufferPointer) throws {
        // An identity key given twice in one object: its first value counts, as it does once the
        // object is decided, and on the rule fast way, which decides at that value.
        // (Read in place: a copy of the list would be retained and released for every id.)
        if k == 0 {
            if frames[t].firstIDValue != nil { return }
        } else if k < frames[t].otherIDValues.count, frames[t].otherIDValues[k] != nil {
            return
        }
        // An entity met again (a friend, an author) is found from its id's bytes: no string, no
        // key, no table lookup by them. A new one gets the hash worked out for the lookup.
        if frames[t].firstRule >= 0, let direct = directRules[frames[t].firstRule], direct.idKey == k {
            return try directIdentity(t, direct, bytes)
        }
        var hash: Int?
        if prefixedIDs {
            let lookup = lookUpInBatch(bytes)
            if let found = lookup.draft { return try decide(t, atEnd: false, found: found) }
            hash = lookup.hash
        }
        // The parser hands over well-formed UTF-8 only (repaired first when asked to), so the
        // string's bytes are these bytes and the hash is the string's.
        let value = String(parsedUTF8: bytes)
        if k == 0 {
            frames[t].firstIDValue = value
        } else {
            if frames[t].otherIDValues.isEmpty {
                frames[t].otherIDValues.append(contentsOf: repeatElement(nil, count: identityKeyNames.count))
            }
            frames[t].otherIDValues[k] = value
        }
        let complete =
            frames[t].firstIDValue != nil
            && (identityKeyNames.count == 1
                || (!frames[t].otherIDValues.isEmpty && frames[t].otherIDValues.dropFirst().allSatisfy { $0 != nil }))
        if complete { try decide(t, atEnd: false, idHash: hash) }
    }

    /// Object `t` is `direct`'s entity, with the id `<prefix>-<bytes>`: the rules need not be
    /// asked, since the first one its position allows decides, and this is its id. As with
    /// prefixed ids, an entity met again is found from the id's bytes, with no string made.
    private func directIdentity(_ t: Int, _ direct: DirectRule, _ bytes: UnsafeRawBufferPointer) throws {
        direct.prefix.withUnsafeBytes { idScratch.set($0) }
        idScratch.append(bytes)
        let id = idScratch.bytes
        let found = reusableDraft(id: id, type: direct.type)
        if let draft = found.draft { return try decide(t, atEnd: false, found: draft) }
        frames[t].firstIDValue = String(parsedUTF8: id)
        try decide(t, atEnd: false, idHash: found.hash)
    }

    // MARK: Frames

    private func pushObject(role: Role, nested: Bool, inEntity: Bool, records: Bool, parentKey: String?) {
        let firstRule = parentKeyFilter?.firstRule(parentKey: parentKey, isNested: nested) ?? -1
        let undecided =
            mayIdentifyAll || firstRule >= 0
            || (parentKeyFilter == nil
                && options.resolver.mayIdentify(parentKey: parentKey, isNested: nested, endpoint: endpoint))
        let t = frames.pushSlot()
        frames[t].reset(
            kind: .object, role: role, nested: nested, inEntity: inEntity, records: records || undecided,
            parentKey: parentKey)
        frames[t].undecided = undecided
        frames[t].firstRule = firstRule
        frames[t].mark = tape.mark
        if frames[t].records { tape.append(.beginObject) }
        if undecided, tape.byteCount > options.maxPendingObjectBytes { forceContainers() }
    }

    /// Object frame `t`'s current key as text, made from its bytes the first time.
    private func objectKey(_ t: Int) -> String? {
        if frames[t].keyPending {
            frames[t].key = pendingKey.string
            frames[t].keyPending = false
        }
        return frames[t].key
    }

    /// Whether object frame `t`'s current key is `name`.
    private func keyEquals(_ t: Int, _ name: StaticString) -> Bool {
        if frames[t].keyPending { return pendingKey.equals(name) }
        guard let key = frames[t].key else { return false }
        return key == name.description
    }

    private func currentKey(_ t: Int) -> String? {
        if frames[t].keyPending { return pendingKey.string }
        if frames[t].kind == .entity {
            let field = frames[t].field
            if field >= 0, let type = frames[t].draft?.type { return type.fieldKeys[field] }
            if field == -1, frames[t].key == nil { return unknownKey.string }
        }
        return frames[t].key
    }

    /// The key a child of entity frame `t` sits under, kept on the frame for paths.
    private func childKey(_ t: Int) -> String? {
        let key = currentKey(t)
        if frames[t].field == -1 { frames[t].key = key }
        return key
    }

    /// For a prefixed id of a registered type, in `bytes`: its ``RecordKey`` hash, and the
    /// batch's draft for it when that may be decoded into again as it is (the conditions
    /// ``decide(_:atEnd:found:idHash:)`` would check). Both nil for an id of no known type.
    private func lookUpInBatch(_ bytes: UnsafeRawBufferPointer) -> (draft: EntityBox?, hash: Int?) {
        guard let known = knownType(ofID: bytes) else { return (nil, nil) }
        let found = reusableDraft(id: bytes, type: known)
        return (found.draft, found.hash)
    }

    /// For the id `bytes` of an entity of `type` (left in `lastType`): its ``RecordKey`` hash,
    /// and the batch's draft for it when that may be decoded into again as it is (the
    /// conditions ``decide(_:atEnd:found:idHash:)`` would check).
    private func reusableDraft(id bytes: UnsafeRawBufferPointer, type: Unmanaged<EntityType>) -> (
        draft: EntityBox?, hash: Int
    ) {
        lastType = type
        let hash = idHash(
            UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
        guard mergeInPlace, type._withUnsafeGuaranteedRef({ $0.dataVersionKey == nil }),
            let existing = batch.draft(id: bytes, hash: hash), !existing.isOpen,
            existing.type === type.takeUnretainedValue()
        else { return (nil, hash) }
        return (existing, hash)
    }

    /// Decides whether undecided object `t` is an entity. An entity decodes the members it has
    /// recorded and goes on as an entity; anything else goes on as a container. `found` is a
    /// draft of the batch already matched to the object's id; `idHash`, when set, is the hash of
    /// a prefixed id whose type a lookup by its bytes found (left in `lastType`) with no draft to
    /// reuse: a new draft is made for it at once, with no resolving and no second lookup.
    private func decide(_ t: Int, atEnd: Bool, found: EntityBox? = nil, idHash: Int? = nil) throws {
        frames[t].undecided = false
        frames[t].identityKey = -1
        var draft: EntityBox?
        var reused = false
        if let found {
            draft = found
            reused = true
        } else if let idHash, frames[t].firstIDValue != nil, let type = lastType {
            // The id moves from the frame into the draft's key.
            let id = frames[t].firstIDValue.take().unsafelyUnwrapped
            draft = type._withUnsafeGuaranteedRef { $0.makeDraft(key: RecordKey(id, hash: idHash)) }
        } else if let identity = resolve(t) {
            if let type = entityType(forPrefix: identity.prefix) {
                let key = RecordKey(identity.id)
                if mergeInPlace, type.dataVersionKey == nil, let existing = batch.drafts[key], !existing.isOpen,
                    existing.type === type
                {
                    draft = existing
                    reused = true
                } else {
                    draft = type.makeDraft(key: key)
                }
            } else {
                switch options.unknownPrefix {
                case .untyped: draft = UntypedBox(key: RecordKey(identity.id), prefix: identity.prefix)
                case .ignore: draft = nil
                case .fail:
                    throw IngestError(
                        code: .unknownPrefix,
                        message: "no entity type is registered for prefix \"\(identity.prefix)\" (id \(identity.id))",
                        path: path(through: t - 1))
                }
            }
        }
        // (Cleared only where set: most are empty, and a release of nothing is still a call. The
        // lists keep their storage for the frame's next object.)
        if frames[t].firstIDValue != nil { frames[t].firstIDValue = nil }
        if !frames[t].otherIDValues.isEmpty { frames[t].otherIDValues.removeAll(keepingCapacity: true) }
        guard let draft else {
            // A container: it records only if its parent does (or it is a field's value).
            let parentRecords = t > 0 && frames[t - 1].records && frames[t - 1].kind != .entity
            if !parentRecords && frames[t].role != .field {
                tape.truncate(to: frames[t].mark)
                frames[t].records = false
            }
            // The entities found inside so far are not nested in an entity: hand them down.
            let items = frames[t].provisionalItems
            let slice = frames[t].provisionalSlice
            frames[t].provisionalItems = []
            frames[t].provisionalSlice = nil
            offerTaskItems(items, below: t)
            if let slice { offerSlice(slice, below: t) }
            return
        }
        // Nested entities found so far were not top-level after all (the list's storage is kept
        // for the frame's next object: every event of a feed would otherwise allocate one).
        if !frames[t].provisionalItems.isEmpty { frames[t].provisionalItems.removeAll(keepingCapacity: true) }
        if frames[t].provisionalSlice != nil { frames[t].provisionalSlice = nil }
        frames[t].kind = .entity
        draft.isOpen = true
        frames[t].type = draft.type.map { .passUnretained($0) }
        frames[t].draft = consume draft
        frames[t].reused = reused
        frames[t].records = false
        if frames[t].key != nil { frames[t].key = nil }
        frames[t].keyPending = false
        frames[t].offset = nil
        frames[t].count = nil
        frames[t].total = nil
        if frames[t].sliceItems != nil { frames[t].sliceItems = nil }
        let mark = frames[t].mark
        if !onlyIDMember(since: mark, of: t) {
            try replayMembers(t, from: EventTape.Mark(tokens: mark.tokens + 1, bytes: mark.bytes))
        }
        tape.truncate(to: mark)
        if !atEnd { frames[t].field = -1 }
    }

    /// Whether the tape since `mark` holds the id member alone (`{`, the id key, its value): the
    /// usual entity begins with its id, and replaying that member would set nothing.
    private func onlyIDMember(since mark: EventTape.Mark, of t: Int) -> Bool {
        guard let idKey, tape.tokenCount == mark.tokens + 3, !idKeyIsVersionKey,
            frames[t].type?._withUnsafeGuaranteedRef({ $0.dataVersionKeyBytes != idKey }) ?? true
        else { return false }
        let key = tape.token(mark.tokens + 1)
        guard key.kind == .key else { return false }
        return idKey.withUnsafeBytes { id in tape.withBytes(of: key) { JSONBytes(unsafeBuffer: $0).equals(id) } }
    }

    /// Decodes the members recorded on the tape since `from` into entity frame `t`.
    private func replayMembers(_ t: Int, from start: EventTape.Mark) throws {
        var i = start.tokens
        let end = tape.tokenCount
        while i < end {
            let token = tape.token(i)
            guard token.kind == .key else { break }
            tape.withBytes(of: token) { entityKey(t, $0) }
            i += 1
            guard i < end else { break }
            let value = tape.token(i)
            switch value.kind {
            case .beginArray, .beginObject:
                let close = tape.matchingEnd(of: i)
                let field = frames[t].field
                if field >= 0 || field == -3, !frames[t].failed, close < end {
                    let range = EventTape.Mark(tokens: i, bytes: Int(value.start))
                    let result: Result<Void, IngestError>
                    do throws(FieldError) {
                        try tape.withReader(from: range, to: close + 1) { (reader) throws(FieldError) in
                            try decodeField(&reader, into: t)
                        }
                        result = .success(())
                    } catch {
                        result = fieldFailed(error, frame: t)
                    }
                    try result.get()
                }
                i = close + 1
            default:
                try tape.withBytes(of: value) { try entityScalar(t, value.kind, $0) }
                i += 1
            }
        }
    }

    private func resolve(_ t: Int) -> ResolvedIdentity? {
        if prefixedIDs {
            guard var id = frames[t].firstIDValue else { return nil }
            // Match the registered types' prefixes on the bytes, the last one first (runs of one
            // type are common), without making a prefix string or hashing one.
            let known = id.withUTF8 { knownType(ofID: UnsafeRawBufferPointer($0)) }
            if let known {
                lastType = known
                return ResolvedIdentity(id: id, prefix: known.takeUnretainedValue().prefix)
            }
            guard let prefix = EntityIDFormat.prefix(of: id) else { return nil }
            return ResolvedIdentity(id: id, prefix: prefix)
        }
        if let rules {
            return rules.resolve(
                value: { k in
                    if k == 0 { return frames[t].firstIDValue }
                    return frames[t].otherIDValues.isEmpty ? nil : frames[t].otherIDValues[k]
                }, parentKey: frames[t].parentKey, isNested: frames[t].nested, endpoint: endpoint)
        }
        var values: [String: String] = [:]
        if let first = frames[t].firstIDValue { values[identityKeyNames[0]] = first }
        for (k, value) in frames[t].otherIDValues.enumerated() where k > 0 {
            if let value { values[identityKeyNames[k]] = value }
        }
        guard !values.isEmpty else { return nil }
        let candidate = IdentityCandidate(
            values: values, parentKey: frames[t].parentKey, isNested: frames[t].nested, endpoint: endpoint)
        return options.resolver.resolve(candidate)
    }

    /// The registered type whose prefix the id in `bytes` has, matched on the bytes, the last
    /// one first (runs of one type are common), without making a prefix string or hashing one.
    private func knownType(ofID bytes: UnsafeRawBufferPointer) -> Unmanaged<EntityType>? {
        if let cached = lastType, cached._withUnsafeGuaranteedRef({ $0.isPrefix(ofID: bytes) }) { return cached }
        guard knownTypes.count <= 16 else { return nil }
        return knownTypes.first { $0.isPrefix(ofID: bytes) }.map { .passUnretained($0) }
    }

    /// The registered type for `prefix`, with the last lookup remembered (runs of one type are
    /// common).
    private func entityType(forPrefix prefix: String) -> EntityType? {
        if let cached = lastType, cached._withUnsafeGuaranteedRef({ $0.prefix == prefix }) {
            return cached.takeUnretainedValue()
        }
        let type = registry.type(forPrefix: prefix)
        lastType = type.map { .passUnretained($0) }
        return type
    }

    /// The tape is over budget: the outermost object still waiting for its identity, and every
    /// recording frame above it, are read as containers from here on.
    private func forceContainers() {
        // Objects inside an entity are bounded by it; only objects outside any entity are forced.
        guard let first = frames.firstIndex(where: { $0.undecided && $0.kind == .object && !$0.inEntity }) else {
            return
        }
        // An entity above would lose the field values it is recording: wait until it ends.
        if first > 0, frames[first - 1].records { return }
        if frames.firstIndex(from: first, where: { $0.kind == .entity }) != nil { return }
        tape.truncate(to: frames[first].mark)
        var items: [RecordKey] = []
        var slice: PendingBatch.Slice?
        for i in first..<frames.count {
            frames[i].undecided = false
            frames[i].records = false
            frames[i].identityKey = -1
            items += frames[i].provisionalItems
            if slice == nil { slice = frames[i].provisionalSlice }
            frames[i].provisionalItems = []
            frames[i].provisionalSlice = nil
        }
        // They are containers now, so their nested candidates are top-level.
        offerTaskItems(items, below: first)
        if let slice { offerSlice(slice, below: first) }
    }

    /// The nearest object below `limit` whose identity is still undecided: where top-level
    /// candidates wait until it is known to be a container.
    private func undecidedObject(below limit: Int) -> Int? {
        var i = limit - 1
        while i >= 0 {
            if frames[i].undecided && frames[i].kind == .object { return i }
            i -= 1
        }
        return nil
    }

    /// A top-level candidate: to the nearest undecided object below `limit`, or the batch.
    private func offerTaskItem(_ id: RecordKey, below limit: Int? = nil) {
        if let i = undecidedObject(below: limit ?? frames.count) {
            frames[i].provisionalItems.append(id)
        } else {
            batch.addTaskItem(id)
        }
    }

    /// Top-level candidates of a frame that turned out a container, in order: the whole list
    /// goes to a frame that has none yet, without copying its keys one by one.
    private func offerTaskItems(_ items: [RecordKey], below limit: Int) {
        guard !items.isEmpty else { return }
        guard let i = undecidedObject(below: limit) else {
            for id in items { batch.addTaskItem(id) }
            return
        }
        if frames[i].provisionalItems.isEmpty {
            frames[i].provisionalItems = items
        } else {
            frames[i].provisionalItems.append(contentsOf: items)
        }
    }

    private func offerSlice(_ slice: PendingBatch.Slice, below limit: Int? = nil) {
        if let i = undecidedObject(below: limit ?? frames.count) {
            if frames[i].provisionalSlice == nil { frames[i].provisionalSlice = slice }
        } else if batch.slice == nil {
            batch.slice = slice
        }
    }

    /// An entity's object ended: hand its draft to the batch and its id to the parent.
    private func entityEnded() throws {
        frames.pop()
        let (role, mark, failed, inEntity) = (
            frames.popped.role, frames.popped.mark, frames.popped.failed, frames.popped.inEntity
        )
        // The popped frame keeps the draft alive until the next push: borrowed, not retained.
        guard frames.popped.draft != nil else { return }
        try Unmanaged.passUnretained(frames.popped.draft.unsafelyUnwrapped)._withUnsafeGuaranteedRef { draft in
            draft.isOpen = false
            var listed = !failed
            if frames.popped.reused {
                // Already in the batch: its fields were decoded into the draft there.
            } else if mergeInPlace, draft.type?.dataVersionKey == nil {
                batch.addUnversioned(draft)
            } else if !failed {
                if let condition = store.hooks.condition, !condition(IncomingEntity(draft: draft)) {
                    listed = false
                } else {
                    _ = batch.add(draft) { store.currentVersion(of: draft.id) }
                }
            }
            if listed, !inEntity { offerTaskItem(draft.key) }
            try childEnded(role: role, mark: mark, id: draft.key.id, listed: listed)
        }
    }

    /// A child frame ended; `id` is set when it was an entity.
    private func childEnded(role: Role, mark: EventTape.Mark, id: String?, listed: Bool = true) throws {
        guard let p = frames.lastIndex else { return }
        if frames[p].records, let id, frames[p].kind != .entity { tape.appendReference(id) }
        switch role {
        case .member:
            if frames[p].kind == .array { frames[p].index += 1 }
        case .sliceElement:
            let index = frames[p].index
            frames[p].sliceItems?.append((index, listed ? id : nil))
            frames[p].index = index + 1
        case .field:
            guard frames[p].kind == .entity else { break }
            if let id {
                try deliverReference(id, to: p)
            } else {
                try fieldValueEnded(from: mark, entity: p)
            }
        }
        if tape.byteCount > options.maxPendingObjectBytes, frames[p].kind != .entity { forceContainers() }
    }

    /// A recorded field value is complete: decode it into its entity and drop it from the tape.
    private func fieldValueEnded(from mark: EventTape.Mark, entity p: Int) throws {
        let result: Result<Void, IngestError>
        do throws(FieldError) {
            try tape.withReader(from: mark, to: tape.tokenCount) { (reader) throws(FieldError) in
                try decodeField(&reader, into: p)
            }
            result = .success(())
        } catch {
            result = fieldFailed(error, frame: p)
        }
        tape.truncate(to: mark)
        try result.get()
    }

    /// Decodes one scalar (or reference) into the current field of entity frame `e`, through a
    /// one-token reader that needs no allocation and no closure.
    private func deliverScalar(_ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer, to e: Int) throws {
        scalarToken.pointee = TapeToken(kind: kind, start: 0, length: Int32(truncatingIfNeeded: bytes.count))
        var reader = FieldReader(tokens: UnsafeBufferPointer(start: scalarToken, count: 1), storage: bytes)
        try deliver(&reader, to: e)
    }

    /// Decodes a nested entity's id into the current field of entity frame `e`: an id field
    /// shares the string.
    private func deliverReference(_ id: String, to e: Int) throws {
        var text = id
        try withUnsafePointer(to: id) { shared in
            try text.withUTF8 { utf8 in
                scalarToken.pointee = TapeToken(
                    kind: .reference, start: 0, length: Int32(truncatingIfNeeded: utf8.count), reference: 0)
                var reader = FieldReader(
                    tokens: UnsafeBufferPointer(start: scalarToken, count: 1), storage: UnsafeRawBufferPointer(utf8),
                    references: UnsafeBufferPointer(start: shared, count: 1))
                try deliver(&reader, to: e)
            }
        }
    }

    /// Decodes the current field of entity frame `e` from `reader`.
    private func deliver(_ reader: inout FieldReader, to e: Int) throws {
        do throws(FieldError) {
            try decodeField(&reader, into: e)
        } catch {
            try fieldFailed(error, frame: e).get()
        }
    }

    private func decodeField(_ reader: inout FieldReader, into e: Int) throws(FieldError) {
        guard !frames[e].failed, frames[e].draft != nil else { return }
        let field = frames[e].field
        if field >= 0, let type = frames[e].type {
            // A draft decoded into again may change what its indexes read after the batch read it.
            if frames[e].reused, type._withUnsafeGuaranteedRef({ $0.fieldsReadByIndexes.contains(field) }) {
                batch.indexedValuesWillChange(frames[e].draft.unsafelyUnwrapped)
            }
            // The frame keeps the draft alive, the registry its type: no retain and release
            // around every value.
            var failure: FieldError?
            Unmanaged.passUnretained(frames[e].draft.unsafelyUnwrapped)._withUnsafeGuaranteedRef { draft in
                type._withUnsafeGuaranteedRef { type in
                    do throws(FieldError) {
                        try draft.decode(field: field, from: &reader, type: type)
                    } catch { failure = error }
                }
            }
            if let failure { throw failure }
        } else if field == -3, let draft = frames[e].draft, let key = frames[e].key {
            draft.set(member: key, value: try reader.readJSONValue())
        }
    }

    private func fieldFailed(_ error: FieldError, frame e: Int) -> Result<Void, IngestError> {
        let error = IngestError(
            code: .decoding, message: error.message, path: path(through: e) + error.relativePath)
        switch options.badEntity {
        case .failResponse:
            return .failure(error)
        case .skipAndReport:
            frames[e].failed = true
            skipped.append(error)
            return .success(())
        }
    }

    /// The JSON path of the value being read in frame `last`: `$.data[3].age`.
    private func path(through last: Int) -> String {
        var path = "$"
        guard last >= 0 else { return path }
        for i in 0...last {
            switch frames[i].kind {
            case .array:
                path += "[\(frames[i].index)]"
            default:
                if let key = currentKey(i) { path += "." + key }
            }
        }
        return path
    }
}

/// Hands the parser's events to an ingestor without keeping it alive: the ingestor owns the
/// parser, and the parser owns its handler, so a direct reference would be a cycle that keeps the
/// ingestor and its store alive for ever. Events only arrive while the ingestor is feeding or
/// finishing, so it is alive whenever this is called.
final class IngestorEvents: JSONEventHandler {
    /// Unretained, and used without retaining it for each event (an `unowned(unsafe)` reference
    /// would still be retained around every call).
    let ingestor: Unmanaged<Ingestor>

    init(_ ingestor: Ingestor) { self.ingestor = .passUnretained(ingestor) }

    func beginObject() throws { try ingestor._withUnsafeGuaranteedRef { try $0.beginObject() } }
    func endObject() throws { try ingestor._withUnsafeGuaranteedRef { try $0.endObject() } }
    func beginArray() throws { try ingestor._withUnsafeGuaranteedRef { try $0.beginArray() } }
    func endArray() throws { try ingestor._withUnsafeGuaranteedRef { try $0.endArray() } }
    func key(_ key: JSONBytes) throws { try ingestor._withUnsafeGuaranteedRef { try $0.key(key) } }
    func string(_ value: JSONBytes) throws { try ingestor._withUnsafeGuaranteedRef { try $0.string(value) } }
    func number(_ value: JSONNumberText) throws { try ingestor._withUnsafeGuaranteedRef { try $0.number(value) } }
    func bool(_ value: Bool) throws { try ingestor._withUnsafeGuaranteedRef { try $0.bool(value) } }
    func null() throws { try ingestor._withUnsafeGuaranteedRef { try $0.null() } }
}

/// The bytes of one key, kept past the parser's callback in storage that is reused: most keys an
/// entity does not declare are never asked for again, so copying them must cost next to nothing.
struct KeyBuffer {
    private var base = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 1)
    private var capacity = 64
    private var count = 0

    @inline(__always)
    mutating func set(_ key: UnsafeRawBufferPointer) {
        if key.count > capacity { grow(to: key.count, keeping: 0) }
        if let source = key.baseAddress { base.copyMemory(from: source, byteCount: key.count) }
        count = key.count
    }

    /// Appends `more` after the bytes already set.
    mutating func append(_ more: UnsafeRawBufferPointer) {
        if count + more.count > capacity { grow(to: count + more.count, keeping: count) }
        if let source = more.baseAddress { (base + count).copyMemory(from: source, byteCount: more.count) }
        count += more.count
    }

    /// The bytes set, until the next change.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Room for `needed` bytes, with the first `kept` of the old ones copied over.
    private mutating func grow(to needed: Int, keeping kept: Int) {
        let old = base
        capacity = max(needed, capacity * 2)
        base = .allocate(byteCount: capacity, alignment: 1)
        base.copyMemory(from: old, byteCount: kept)
        old.deallocate()
    }

    var string: String { String(parsedUTF8: UnsafeRawBufferPointer(start: base, count: count)) }

    func equals(_ text: StaticString) -> Bool {
        JSONBytes(unsafeBuffer: UnsafeRawBufferPointer(start: base, count: count)).equals(text)
    }

    func deallocate() { base.deallocate() }
}
