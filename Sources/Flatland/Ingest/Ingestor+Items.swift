@_spi(FlatlandInternal) import FlatlandJSON

// Items: what the top level, the task's collection and the parent frames receive as entities end.
extension Ingestor {
    /// The tape is over budget: the outermost object still waiting for its identity, and every
    /// recording frame above it, are read as containers from here on.
    func forceContainers() {
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
            frames[i].identityKey = nil
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
    func undecidedObject(below limit: Int) -> Int? {
        var i = limit - 1
        while i >= 0 {
            if frames[i].undecided && frames[i].kind == .object { return i }
            i -= 1
        }
        return nil
    }

    /// A top-level candidate: to the nearest undecided object below `limit`, or the batch.
    func offerTaskItem(_ id: RecordKey, below limit: Int? = nil) {
        if let i = undecidedObject(below: limit ?? frames.count) {
            frames[i].provisionalItems.append(id)
        } else {
            batch.addTaskItem(id)
        }
    }

    /// Top-level candidates of a frame that turned out a container, in order: the whole list
    /// goes to a frame that has none yet, without copying its keys one by one.
    func offerTaskItems(_ items: [RecordKey], below limit: Int) {
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

    func offerSlice(_ slice: PendingBatch.Slice, below limit: Int? = nil) {
        if let i = undecidedObject(below: limit ?? frames.count) {
            if frames[i].provisionalSlice == nil { frames[i].provisionalSlice = slice }
        } else if batch.slice == nil {
            batch.slice = slice
        }
    }

    /// An entity's object ended: hand its draft to the batch and its id to the parent.
    func entityEnded() throws {
        frames.pop()
        let (role, mark, failed, inEntity) = (
            frames.popped.role, frames.popped.mark, frames.popped.failed, frames.popped.inEntity
        )
        // The popped frame keeps the draft alive until the next push: borrowed, not retained.
        guard frames.popped.draft != nil else { return }
        try Unretained(frames.popped.draft.unsafelyUnwrapped).with { draft in
            draft.isOpen = false
            var listed = !failed
            if frames.popped.reused {
                // Already in the batch: its fields were decoded into the draft there.
            } else if mergeInPlace, draft.type?.dataVersionKey == nil {
                batch.addUnversioned(draft)
            } else if !failed {
                if let condition, !condition(IncomingEntity(draft: draft)) {
                    listed = false
                } else {
                    _ = batch.add(draft) { context.currentVersion(draft.id) }
                }
            }
            if listed, !inEntity { offerTaskItem(draft.key) }
            try childEnded(role: role, mark: mark, id: draft.key.id, listed: listed, skipped: failed)
        }
    }

    /// A child frame ended; `id` is set when it was an entity, `skipped` when that entity was
    /// left out under ``IngestOptions/BadEntityPolicy/skipAndReport``: the parent then holds no
    /// reference to it (the member, or the array element, is left out as if it were absent).
    func childEnded(role: Role, mark: EventTape.Mark, id: String?, listed: Bool = true, skipped: Bool = false)
        throws
    {
        guard let p = frames.lastIndex else { return }
        if frames[p].records, let id, frames[p].kind != .entity {
            if !skipped {
                tape.appendReference(id)
            } else if frames[p].kind == .object, mark.tokens > 0 {
                // The member's key is the last token: it goes too.
                let key = tape.token(mark.tokens - 1)
                tape.truncate(
                    to: EventTape.Mark(tokens: mark.tokens - 1, bytes: Int(key.start), references: mark.references))
            }
        }
        switch role {
        case .member:
            if frames[p].kind == .array { frames[p].index += 1 }
        case .sliceElement:
            let index = frames[p].index
            frames[p].sliceItems?.append((index, listed ? id : nil))
            frames[p].index = index + 1
        case .field:
            guard frames[p].kind == .entity, !skipped else { break }
            if let id {
                try deliverReference(id, to: p)
            } else {
                try fieldValueEnded(from: mark, entity: p)
            }
        }
        if tape.byteCount > options.maxPendingObjectBytes, frames[p].kind != .entity { forceContainers() }
    }
}
