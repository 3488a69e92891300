@_spi(FlatlandInternal) import FlatlandJSON

// Events: the parser's calls, through ``IngestorEvents``, and the frames they open and close.
extension Ingestor {
    func beginObject() throws {
        if cancelled { throw CancellationError() }
        guard let t = frames.lastIndex else {
            pushObject(role: .member, nested: false, inEntity: false, records: false, parentKey: nil)
            return
        }
        switch frames[t].kind {
        case .object:
            if !frames[t].inEntity, let member = pagingMember(t) { try pagingValue(t, member, .beginObject, nil) }
            pushObject(
                role: .member, nested: frames[t].nested || frames[t].undecided, inEntity: frames[t].inEntity,
                records: frames[t].records, parentKey: objectKey(t))
        case .array:
            pushObject(
                role: frames[t].isSliceData ? .sliceElement : .member, nested: frames[t].nested,
                inEntity: frames[t].inEntity, records: frames[t].records, parentKey: frames[t].parentKey)
        case .entity:
            let isField = frames[t].member.isDecoded
            pushObject(
                role: isField ? .field : .member, nested: true, inEntity: true, records: isField,
                parentKey: childKey(t))
        }
    }

    func beginArray() throws {
        if let p = frames.lastIndex, frames[p].kind == .object, !frames[p].inEntity, let member = pagingMember(p) {
            try pagingValue(p, member, .beginArray, nil)
        }
        pushArray()
        let t = frames.count - 1
        frames[t].mark = tape.mark
        if frames[t].records { tape.append(.beginArray) }
    }

    /// Opens the frame of an array that begins in the innermost frame.
    func pushArray() {
        guard let p = frames.lastIndex else {
            let t = frames.pushSlot()
            frames[t].reset(kind: .array, role: .member, nested: false, inEntity: false, records: false, parentKey: nil)
            // A top-level array is a page when the envelope has no items member, or when the
            // request says where the page is.
            if itemsKey == nil || requestStart != nil {
                frames[t].isSliceData = true
                frames[t].sliceItems = []
            }
            return
        }
        switch frames[p].kind {
        case .object:
            let key = objectKey(p)
            let isSliceData = !frames[p].inEntity && key != nil && key == itemsKey
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
            let isField = frames[p].member.isDecoded
            let key = childKey(p)
            let t = frames.pushSlot()
            frames[t].reset(
                kind: .array, role: isField ? .field : .member, nested: true, inEntity: true, records: isField,
                parentKey: key)
        }
    }

    func pushObject(role: Role, nested: Bool, inEntity: Bool, records: Bool, parentKey: String?) {
        let firstRule = parentKeyFilter?.firstRule(parentKey: parentKey, isNested: nested)
        let undecided =
            mayIdentifyAll || firstRule != nil
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

    func endArray() throws {
        frames.pop()
        if frames.popped.records { tape.append(.endArray) }
        if frames.popped.isSliceData {
            if let p = frames.lastIndex {
                // Moved, not shared: the popped frame's copy would make the parent's next append
                // copy.
                frames[p].sliceItems = frames.popped.sliceItems.take()
                frames[p].index = frames.popped.index
            } else if let items = frames.popped.sliceItems.take() {
                try pageEnded(items: items, count: frames.popped.index, members: nil)
            }
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
            frames.popped.page != nil || (frames.count == 0 && rootIsPage),
            let items = frames.popped.sliceItems.take()
        {
            try pageEnded(items: items, count: frames.popped.index, members: frames.popped.page)
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
                frames[t].identityKey = identityKeys.firstIndex { bytes in bytes.withUnsafeBytes { key.equals($0) } }
                    .map { Int32(truncatingIfNeeded: $0) }
            }
        case .entity:
            entityKey(t, key.buffer)
        case .array:
            break
        }
    }

    func string(_ value: JSONBytes) throws { try scalar(.string, value.buffer) }

    func number(_ value: JSONNumberText) throws { try scalar(.number, value.bytes.buffer) }

    func bool(_ value: Bool) throws {
        try scalar(value ? .true : .false, UnsafeRawBufferPointer(start: nil, count: 0))
    }

    func null() throws { try scalar(.null, UnsafeRawBufferPointer(start: nil, count: 0)) }

    func scalar(_ kind: FieldToken.Kind, _ bytes: UnsafeRawBufferPointer) throws {
        guard let t = frames.lastIndex else { return }
        switch frames[t].kind {
        case .object:
            if frames[t].records { tape.append(kind, bytes) }
            if !frames[t].inEntity, let member = pagingMember(t) { try pagingValue(t, member, kind, bytes) }
            if frames[t].undecided, let k = frames[t].identityKey {
                frames[t].identityKey = nil
                if kind == .string || kind == .number { try identityValue(t, Int(k), bytes) }
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
}

/// Hands the parser's events to an ingestor without keeping it alive: the ingestor owns the
/// parser, and the parser owns its handler, so a direct reference would be a cycle that keeps the
/// ingestor and its store alive for ever. Events only arrive while the ingestor is feeding or
/// finishing, so it is alive whenever this is called.
final class IngestorEvents: JSONEventHandler {
    /// Unretained, and used without retaining it for each event (an `unowned(unsafe)` reference
    /// would still be retained around every call).
    let ingestor: Unretained<Ingestor>

    init(_ ingestor: Ingestor) { self.ingestor = Unretained(ingestor) }

    func beginObject() throws { try ingestor.with { try $0.beginObject() } }
    func endObject() throws { try ingestor.with { try $0.endObject() } }
    func beginArray() throws { try ingestor.with { try $0.beginArray() } }
    func endArray() throws { try ingestor.with { try $0.endArray() } }
    func key(_ key: JSONBytes) throws { try ingestor.with { try $0.key(key) } }
    func string(_ value: JSONBytes) throws { try ingestor.with { try $0.string(value) } }
    func number(_ value: JSONNumberText) throws { try ingestor.with { try $0.number(value) } }
    func bool(_ value: Bool) throws { try ingestor.with { try $0.bool(value) } }
    func null() throws { try ingestor.with { try $0.null() } }
}
