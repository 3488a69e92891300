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
/// whose values are scanned for entities. Memory for the walk is bounded by the largest single
/// entity, not by the response.
public final class Ingestor: JSONEventHandler {
    enum Kind: UInt8 { case container, array, undecided, entity, record }

    /// What the parent does with a frame's result.
    enum Role: UInt8 {
        /// The document's root value.
        case top
        /// A member of a container, or an element of an array that is scanned.
        case member
        /// An element of a slice's `data` array.
        case sliceElement
        /// The value of an entity's field: delivered to the entity.
        case field
        /// Inside a recorded field value: kept on the tape.
        case inRecord
    }

    struct Frame {
        var kind: Kind
        var role: Role
        var nested: Bool
        var parentKey: String?
        /// The current member's key, where it has to be known as text.
        var key: String?
        /// Arrays: the current element's index.
        var index = 0
        /// Undecided and record frames: where their recording starts.
        var mark = EventTape.Mark(tokens: 0, bytes: 0)
        /// Undecided frames: open brackets inside; record frames: open brackets recorded.
        var depth = 0
        /// Undecided frames: which identity key's value comes next (-1 none).
        var identityKey = -1
        var idValues: [String: String] = [:]
        var scalarOnly = true
        /// Entity frames.
        var draft: Draft?
        /// Typed field index; or -1 not a field, -2 the id member, -3 an untyped member (`key`).
        var field = -1
        var lastField = -1
        var isVersion = false
        var failed = false
        /// Record frames: whether this frame holds a whole field value.
        var fieldRoot = false
        /// Containers: the slice members seen.
        var offset: Int?
        var count: Int?
        var total: Int?
        var sliceItems: [(index: Int, id: String?)]?
        /// Arrays: whether this is a slice's `data` array.
        var isSliceData = false

        init(kind: Kind, role: Role, nested: Bool, parentKey: String?) {
            self.kind = kind
            self.role = role
            self.nested = nested
            self.parentKey = parentKey
        }
    }

    let store: Store
    let options: IngestOptions
    /// The non-fielded endpoint, when the response came from one.
    public let endpoint: String?
    let taskID: String?
    private var parser: JSONStreamParser!
    private var frames: [Frame] = []
    private var tape = EventTape()
    private var scratch = EventTape()
    private var batch = PendingBatch()
    private var skipped: [IngestError] = []
    private var failure: IngestError?
    private var finished = false
    private var cancelled = false
    private let identityKeys: [[UInt8]]
    private let identityKeyNames: [String]
    private let idKey: [UInt8]?
    private let prefixedIDs: Bool
    private let versionKey: [UInt8]?

    init(store: Store, endpoint: String?, taskID: String?, options: IngestOptions) {
        self.store = store
        self.options = options
        self.endpoint = endpoint.map { Endpoint.nonFielded($0, ignoring: options.ignoredParameters) }
        self.taskID = taskID
        identityKeyNames = options.resolver.identityKeys
        identityKeys = identityKeyNames.map { Array($0.utf8) }
        idKey = options.resolver.idKey.map { Array($0.utf8) }
        prefixedIDs = options.resolver is PrefixedIDResolver
        versionKey = options.versionKey.map { Array($0.utf8) }
        parser = JSONStreamParser(handler: self, options: options.parser)
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
            var result = try store.apply(batch, taskID: taskID, endpoint: endpoint)
            result.skipped = skipped
            result.bytes = parser.bytesConsumed
            return result
        } catch {
            throw IngestError(code: .json, message: "the store could not be written: \(error)")
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

    // MARK: Events

    public func beginObject() throws {
        if cancelled { throw CancellationError() }
        guard let t = frames.indices.last else {
            pushUndecided(role: .top, nested: false, parentKey: nil)
            return
        }
        switch frames[t].kind {
        case .container:
            pushUndecided(role: .member, nested: frames[t].nested, parentKey: frames[t].key)
        case .array:
            pushUndecided(
                role: frames[t].isSliceData ? .sliceElement : .member, nested: frames[t].nested,
                parentKey: frames[t].parentKey)
        case .undecided:
            if try recordRaw(.beginObject, t) { frames[t].depth += 1 }
        case .entity:
            let isField = frames[t].field >= 0 || frames[t].field == -3
            pushUndecided(role: isField ? .field : .member, nested: true, parentKey: currentKey(frames[t]))
        case .record:
            pushUndecided(role: .inRecord, nested: true, parentKey: frames[t].key)
        }
    }

    public func beginArray() throws {
        guard let t = frames.indices.last else {
            frames.append(Frame(kind: .array, role: .top, nested: false, parentKey: nil))
            return
        }
        switch frames[t].kind {
        case .container:
            var frame = Frame(kind: .array, role: .member, nested: frames[t].nested, parentKey: frames[t].key)
            frame.isSliceData = !frame.nested && frames[t].key == "data"
            if frame.isSliceData { frame.sliceItems = [] }
            frames.append(frame)
        case .array:
            frames.append(
                Frame(
                    kind: .array, role: frames[t].isSliceData ? .sliceElement : .member, nested: frames[t].nested,
                    parentKey: frames[t].parentKey))
        case .undecided:
            if try recordRaw(.beginArray, t) { frames[t].depth += 1 }
        case .entity:
            if frames[t].field >= 0 || frames[t].field == -3 {
                var frame = Frame(kind: .record, role: .field, nested: true, parentKey: currentKey(frames[t]))
                frame.mark = tape.mark
                frame.fieldRoot = true
                frame.depth = 1
                tape.append(.beginArray)
                frames.append(frame)
            } else {
                frames.append(Frame(kind: .array, role: .member, nested: true, parentKey: currentKey(frames[t])))
            }
        case .record:
            tape.append(.beginArray)
            frames[t].depth += 1
        }
    }

    public func endArray() throws {
        let t = frames.count - 1
        switch frames[t].kind {
        case .array:
            let frame = frames.removeLast()
            if frame.isSliceData, let c = frames.indices.last { frames[c].sliceItems = frame.sliceItems }
            try childEnded(frame, id: nil)
        case .undecided:
            if try recordRaw(.endArray, t) { frames[t].depth -= 1 }
        case .record:
            tape.append(.endArray)
            frames[t].depth -= 1
            if frames[t].depth == 0 { try recordEnded() }
        case .container, .entity:
            break  // the parser never sends this
        }
    }

    public func endObject() throws {
        let t = frames.count - 1
        switch frames[t].kind {
        case .container:
            let frame = frames.removeLast()
            if let items = frame.sliceItems, !frame.nested, batch.slice == nil,
                frame.offset != nil || frame.count != nil || frame.total != nil
            {
                batch.slice = PendingBatch.Slice(offset: frame.offset ?? 0, total: frame.total, items: items)
            }
            try childEnded(frame, id: nil)
        case .undecided:
            if frames[t].depth > 0 {
                if try recordRaw(.endObject, t) { frames[t].depth -= 1 }
            } else {
                try decide(t)
                try endObject()
            }
        case .entity:
            try entityEnded()
        case .record:
            tape.append(.endObject)
            frames[t].depth -= 1
            if frames[t].depth == 0 { try recordEnded() }
        case .array:
            break  // the parser never sends this
        }
    }

    public func key(_ key: JSONBytes) throws {
        let t = frames.count - 1
        switch frames[t].kind {
        case .container:
            frames[t].key = key.string
        case .undecided:
            // Keys are not checked against the limit: an identity key must get to see its value.
            recordToken(.key, t, key.buffer)
            if frames[t].depth == 0 {
                frames[t].identityKey = identityKeys.firstIndex { key.buffer.elementsEqual($0) } ?? -1
            }
        case .entity:
            // The type's own version key wins over the one in the options.
            if let own = frames[t].draft?.type?.dataVersionKeyBytes {
                frames[t].isVersion = key.buffer.elementsEqual(own)
            } else {
                frames[t].isVersion = versionKey.map { key.buffer.elementsEqual($0) } ?? false
            }
            if let idKey, key.buffer.elementsEqual(idKey) {
                frames[t].field = -2
            } else if let type = frames[t].draft?.type {
                if let i = type.fieldIndex(key, hint: frames[t].lastField + 1) {
                    frames[t].field = i
                    frames[t].lastField = i
                } else {
                    frames[t].field = -1
                    frames[t].key = key.string
                }
            } else {
                frames[t].field = -3
                frames[t].key = key.string
            }
        case .record:
            tape.append(.key, key.buffer)
            frames[t].key = key.string
        case .array:
            break
        }
    }

    public func string(_ value: JSONBytes) throws { try scalar(.string, value.buffer) }
    public func number(_ value: JSONNumberText) throws { try scalar(.number, value.bytes.buffer) }
    public func bool(_ value: Bool) throws {
        try scalar(value ? .true : .false, UnsafeRawBufferPointer(start: nil, count: 0))
    }
    public func null() throws { try scalar(.null, UnsafeRawBufferPointer(start: nil, count: 0)) }

    private func scalar(_ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer) throws {
        guard let t = frames.indices.last else { return }
        switch frames[t].kind {
        case .container:
            guard kind == .number, !frames[t].nested, let key = frames[t].key else { return }
            let value = Int(exactly: (try? JSONNumberText(unsafeBuffer: bytes).int64()) ?? -1)
            switch key {
            case "offset": frames[t].offset = value
            case "count": frames[t].count = value
            case "total": frames[t].total = value
            default: break
            }
        case .array:
            let index = frames[t].index
            if frames[t].isSliceData { frames[t].sliceItems?.append((index, nil)) }
            frames[t].index = index + 1
        case .undecided:
            recordToken(kind, t, bytes)
            let k = frames[t].identityKey
            if frames[t].depth == 0, k >= 0 {
                frames[t].identityKey = -1
                if kind == .string || kind == .number {
                    frames[t].idValues[identityKeyNames[k]] = String(decoding: bytes, as: UTF8.self)
                    if frames[t].idValues.count == identityKeyNames.count { return try decide(t) }
                }
            }
            // The identity is judged before the limit, so an object whose identity comes first
            // is an entity whatever the limit.
            _ = try withinLimit(t)
        case .entity:
            if frames[t].failed { return }
            if frames[t].isVersion, kind == .number {
                frames[t].draft?.dataVersion = try? JSONNumberText(unsafeBuffer: bytes).double()
            }
            let field = frames[t].field
            if field >= 0 || field == -3 {
                try withScalarReader(kind, bytes) { (reader) throws(any Error) in try deliver(&reader, to: t) }
            }
        case .record:
            tape.append(kind, bytes)
        }
    }

    // MARK: Frames

    private func pushUndecided(role: Role, nested: Bool, parentKey: String?) {
        var frame = Frame(kind: .undecided, role: role, nested: nested, parentKey: parentKey)
        frame.mark = tape.mark
        frames.append(frame)
    }

    /// Records an event of undecided frame `t`. Returns false when that pushed the frame past
    /// ``IngestOptions/maxPendingObjectBytes``: it is then decided, and the event has already
    /// been replayed through the converted frame, so the caller must not touch the frame again.
    private func recordRaw(_ kind: FieldToken.Kind, _ t: Int, _ bytes: UnsafeRawBufferPointer? = nil) throws -> Bool {
        recordToken(kind, t, bytes)
        return try withinLimit(t)
    }

    @inline(__always)
    private func recordToken(_ kind: FieldToken.Kind, _ t: Int, _ bytes: UnsafeRawBufferPointer? = nil) {
        if let bytes { tape.append(kind, bytes) } else { tape.append(kind) }
        if kind == .beginObject || kind == .beginArray { frames[t].scalarOnly = false }
    }

    /// Whether undecided frame `t` is still within ``IngestOptions/maxPendingObjectBytes``; past
    /// it, the frame is decided (and what it recorded replayed) and this returns false.
    private func withinLimit(_ t: Int) throws -> Bool {
        if tape.byteCount(since: frames[t].mark) + 16 * (tape.tokens.count - frames[t].mark.tokens)
            > options.maxPendingObjectBytes
        {
            try decide(t)
            return false
        }
        return true
    }

    private func currentKey(_ frame: Frame) -> String? {
        if frame.field >= 0, let type = frame.draft?.type { return type.fieldKeys[frame.field] }
        return frame.key
    }

    /// Decides whether undecided frame `t` is an entity, converts it, and replays what it
    /// recorded through the converted frame.
    private func decide(_ t: Int) throws {
        let frame = frames[t]
        var draft: Draft?
        if let identity = resolve(frame) {
            if let type = store.registry.type(forPrefix: identity.prefix) {
                draft = type.makeDraft(id: identity.id)
            } else {
                switch options.unknownPrefix {
                case .untyped: draft = UntypedDraft(id: identity.id, prefix: identity.prefix)
                case .ignore: draft = nil
                case .fail:
                    throw IngestError(
                        code: .unknownPrefix,
                        message: "no entity type is registered for prefix \"\(identity.prefix)\" (id \(identity.id))",
                        path: path(through: t - 1))
                }
            }
        }
        if let draft {
            frames[t].kind = .entity
            frames[t].draft = draft
        } else if frame.role == .field || frame.role == .inRecord {
            frames[t].kind = .record
            frames[t].fieldRoot = frame.role == .field
        } else {
            frames[t].kind = .container
        }
        frames[t].depth = 0
        frames[t].identityKey = -1
        frames[t].idValues = [:]
        // Replay what was recorded since the object began.
        let region = frame.mark
        if frames[t].kind == .entity, frame.scalarOnly, tape.tokens.count - region.tokens == 2,
            tape.tokens[region.tokens].kind == .key, prefixedIDs
        {
            // Only the id member so far: nothing to replay.
            tape.truncate(to: region)
            return
        }
        if frame.scalarOnly {
            scratch.removeAll()
            scratch.append(from: tape, since: region)
            tape.truncate(to: region)
            if frames[t].kind == .record { startRecordObject(t) }
            try replay(scratch)
        } else {
            let copy = tape.copy(from: region)
            tape.truncate(to: region)
            if frames[t].kind == .record { startRecordObject(t) }
            try replay(copy)
        }
    }

    private func startRecordObject(_ t: Int) {
        frames[t].mark = tape.mark
        tape.append(.beginObject)
        frames[t].depth = 1
    }

    private func replay(_ recorded: EventTape) throws {
        try recorded.forEach { kind, bytes in
            switch kind {
            case .beginObject: try beginObject()
            case .endObject: try endObject()
            case .beginArray: try beginArray()
            case .endArray: try endArray()
            case .key: try key(JSONBytes(unsafeBuffer: bytes))
            case .string, .number, .true, .false, .null, .reference: try scalar(kind, bytes)
            }
        }
    }

    private func resolve(_ frame: Frame) -> ResolvedIdentity? {
        guard !frame.idValues.isEmpty else { return nil }
        if prefixedIDs, let id = frame.idValues[identityKeyNames[0]] {
            guard let prefix = EntityIDFormat.prefix(of: id) else { return nil }
            return ResolvedIdentity(id: id, prefix: prefix)
        }
        let candidate = IdentityCandidate(
            values: frame.idValues, parentKey: frame.parentKey, isNested: frame.nested, endpoint: endpoint)
        return options.resolver.resolve(candidate)
    }

    /// An entity's object ended: hand its draft to the batch and its id to the parent.
    private func entityEnded() throws {
        let frame = frames.removeLast()
        guard let draft = frame.draft else { return }
        var listed = !frame.failed
        if !frame.failed {
            if let condition = store.hooks.condition, !condition(IncomingEntity(draft: draft)) {
                listed = false
            } else {
                _ = batch.add(draft) { store.currentVersion(of: draft.id) }
            }
        }
        if listed, !frame.nested { batch.addTaskItem(draft.id) }
        try childEnded(frame, id: draft.id, listed: listed)
    }

    /// A child frame ended; `id` is set when it was an entity.
    private func childEnded(_ frame: Frame, id: String?, listed: Bool = true) throws {
        guard let p = frames.indices.last else { return }
        switch frame.role {
        case .top:
            break
        case .inRecord:
            if let id { tape.append(.reference, id) }
        case .member:
            if frames[p].kind == .array { frames[p].index += 1 }
        case .sliceElement:
            let index = frames[p].index
            frames[p].sliceItems?.append((index, listed ? id : nil))
            frames[p].index = index + 1
        case .field:
            if let id {
                var id = id
                try id.withUTF8 { utf8 in
                    try withScalarReader(.reference, UnsafeRawBufferPointer(utf8)) { (reader) throws(any Error) in
                        try deliver(&reader, to: p)
                    }
                }
            }
        }
    }

    /// A recorded value is complete: a field root goes to its entity; a nested object stays.
    private func recordEnded() throws {
        let frame = frames.removeLast()
        guard frame.fieldRoot else { return try childEnded(frame, id: nil) }
        let p = frames.count - 1
        let result: Result<Void, IngestError>
        do throws(FieldError) {
            try tape.withReader(from: frame.mark) { (reader) throws(FieldError) in try decodeField(&reader, into: p) }
            result = .success(())
        } catch {
            result = fieldFailed(error, frame: p)
        }
        tape.truncate(to: frame.mark)
        try result.get()
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
        guard !frames[e].failed, let draft = frames[e].draft else { return }
        let field = frames[e].field
        if field >= 0 {
            try draft.decode(field: field, from: &reader)
        } else if field == -3, let key = frames[e].key {
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
        for frame in frames[...last] {
            switch frame.kind {
            case .array:
                path += "[\(frame.index)]"
            default:
                if let key = currentKey(frame) { path += "." + key }
            }
        }
        return path
    }
}

extension EventTape {
    /// Appends the tokens of `other` since `mark`, rebased.
    mutating func append(from other: EventTape, since mark: Mark) {
        other.storage.withUnsafeBytes { s in
            for t in other.tokens[mark.tokens...] {
                append(t.kind, UnsafeRawBufferPointer(rebasing: s[Int(t.start)..<Int(t.start) + Int(t.length)]))
            }
        }
    }
}
