@_spi(FlatlandInternal) import FlatlandJSON

// Identity: deciding whether an object is an entity, and of which type.
extension Ingestor {
    func identityValue(_ t: Int, _ k: Int, _ bytes: UnsafeRawBufferPointer) throws {
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
        if let rule = frames[t].firstRule, let direct = directRules[Int(rule)], direct.idKey == k {
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
    func directIdentity(_ t: Int, _ direct: DirectRule, _ bytes: UnsafeRawBufferPointer) throws {
        direct.prefix.withUnsafeBytes { idScratch.set($0) }
        idScratch.append(bytes)
        let id = idScratch.bytes
        let found = reusableDraft(id: id, type: direct.type)
        if let draft = found.draft { return try decide(t, atEnd: false, found: draft) }
        frames[t].firstIDValue = String(parsedUTF8: id)
        try decide(t, atEnd: false, idHash: found.hash)
    }

    /// For a prefixed id of a registered type, in `bytes`: its ``RecordKey`` hash, and the
    /// batch's draft for it when that may be decoded into again as it is (the conditions
    /// ``decide(_:atEnd:found:idHash:)`` would check). Both nil for an id of no known type.
    func lookUpInBatch(_ bytes: UnsafeRawBufferPointer) -> (draft: EntityBox?, hash: Int?) {
        guard let known = knownType(ofID: bytes) else { return (nil, nil) }
        let found = reusableDraft(id: bytes, type: known)
        return (found.draft, found.hash)
    }

    /// For the id `bytes` of an entity of `type` (left in `lastType`): its ``RecordKey`` hash,
    /// and the batch's draft for it when that may be decoded into again as it is (the
    /// conditions ``decide(_:atEnd:found:idHash:)`` would check).
    func reusableDraft(id bytes: UnsafeRawBufferPointer, type: Unretained<EntityType>) -> (
        draft: EntityBox?, hash: Int
    ) {
        lastType = type
        let hash = idHash(
            UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
        guard mergeInPlace, type.with({ $0.dataVersionKey == nil }),
            let existing = batch.draft(id: bytes, hash: hash), !existing.isOpen,
            existing.type === type.object
        else { return (nil, hash) }
        return (existing, hash)
    }

    /// Decides whether undecided object `t` is an entity. An entity decodes the members it has
    /// recorded and goes on as an entity; anything else goes on as a container. `found` is a
    /// draft of the batch already matched to the object's id; `idHash`, when set, is the hash of
    /// a prefixed id whose type a lookup by its bytes found (left in `lastType`) with no draft to
    /// reuse: a new draft is made for it at once, with no resolving and no second lookup.
    func decide(_ t: Int, atEnd: Bool, found: EntityBox? = nil, idHash: Int? = nil) throws {
        frames[t].undecided = false
        frames[t].identityKey = nil
        var draft: EntityBox?
        var reused = false
        if let found {
            draft = found
            reused = true
        } else if let idHash, frames[t].firstIDValue != nil, let type = lastType {
            // The id moves from the frame into the draft's key.
            let id = frames[t].firstIDValue.take().unsafelyUnwrapped
            draft = type.with { $0.makeDraft(key: RecordKey(id, hash: idHash)) }
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
        frames[t].type = draft.type.map { Unretained($0) }
        frames[t].draft = consume draft
        frames[t].reused = reused
        frames[t].records = false
        if frames[t].key != nil { frames[t].key = nil }
        frames[t].keyPending = false
        if frames[t].page != nil { frames[t].page = nil }
        if frames[t].sliceItems != nil { frames[t].sliceItems = nil }
        let mark = frames[t].mark
        if !onlyIDMember(since: mark, of: t) {
            try replayMembers(t, from: EventTape.Mark(tokens: mark.tokens + 1, bytes: mark.bytes))
        }
        tape.truncate(to: mark)
        if !atEnd { frames[t].member = .skipped }
    }

    /// Whether the tape since `mark` holds the id member alone (`{`, the id key, its value): the
    /// usual entity begins with its id, and replaying that member would set nothing.
    func onlyIDMember(since mark: EventTape.Mark, of t: Int) -> Bool {
        guard let idKey, tape.tokenCount == mark.tokens + 3, !idKeyIsVersionKey,
            frames[t].type?.with({ $0.dataVersionKeyBytes != idKey }) ?? true
        else { return false }
        let key = tape.token(mark.tokens + 1)
        guard key.kind == .key else { return false }
        return idKey.withUnsafeBytes { id in tape.withBytes(of: key) { JSONBytes(unsafeBuffer: $0).equals(id) } }
    }

    /// Decodes the members recorded on the tape since `from` into entity frame `t`.
    func replayMembers(_ t: Int, from start: EventTape.Mark) throws {
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
                if frames[t].member.isDecoded, !frames[t].failed, close < end {
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

    func resolve(_ t: Int) -> ResolvedIdentity? {
        if prefixedIDs {
            guard var id = frames[t].firstIDValue else { return nil }
            // Match the registered types' prefixes on the bytes, the last one first (runs of one
            // type are common), without making a prefix string or hashing one.
            let known = id.withUTF8 { knownType(ofID: UnsafeRawBufferPointer($0)) }
            if let known {
                lastType = known
                return ResolvedIdentity(id: id, prefix: known.object.prefix)
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
    func knownType(ofID bytes: UnsafeRawBufferPointer) -> Unretained<EntityType>? {
        if let cached = lastType, cached.with({ $0.isPrefix(ofID: bytes) }) { return cached }
        guard knownTypes.count <= 16 else { return nil }
        return knownTypes.first { $0.isPrefix(ofID: bytes) }.map { Unretained($0) }
    }

    /// The registered type for `prefix`, with the last lookup remembered (runs of one type are
    /// common).
    func entityType(forPrefix prefix: String) -> EntityType? {
        if let cached = lastType, cached.with({ $0.prefix == prefix }) {
            return cached.object
        }
        let type = registry.type(forPrefix: prefix)
        lastType = type.map { Unretained($0) }
        return type
    }
}
