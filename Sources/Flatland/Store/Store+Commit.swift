import FlatlandJSON

/// The one write path: every writing method of ``Store`` builds a ``StoreWrite`` and hands it
/// to ``Store/commit(_:alongside:persisting:)``.
///
/// A commit holds the writer lock from start to end, so commits happen one at a time and are
/// numbered, hooked and announced in the order they happen. Inside it:
/// 1. under the read lock, briefly: the change is worked out against the contents (records
///    merged, removals found, collections updated and pruned), without changing them; an
///    in-memory store with no persistence, which cannot fail, puts it in place at once;
/// 2. with no store lock held: the persistence writes it, with the work alongside, in one
///    transaction (readers keep reading the store as it was);
/// 3. under the read lock, briefly: the change is put in place;
/// 4. `afterStore` hooks, then the observers' change sets.
extension Store {
    @discardableResult
    func commit(_ write: inout StoreWrite, alongside work: (any StoreTransactionWork)?, persisting: Bool = true)
        throws(StoreWriteError) -> CommitResult
    {
        if CommitScope.isCommitting(self) {
            throw StoreWriteError(
                .writeInsideCommit, "a hook or the work alongside a commit wrote to the store it is committing to")
        }
        let isData = write.kind == .data
        if isData, let before = hooks.beforeStore {
            write.batch.forEachDraft { before(IncomingEntity(draft: $0)) }
        }
        if let work, persistence == nil {
            throw StoreWriteError(
                .unsupportedWork, "an in-memory store has no transaction to run \(type(of: work)) in")
        }
        return try writer.withLock { () throws(StoreWriteError) -> CommitResult in
            try commitHoldingWriter(&write, alongside: work, persisting: persisting)
        }
    }

    /// The commit, once the writer lock is held.
    @discardableResult
    func commitHoldingWriter(_ write: inout StoreWrite, alongside work: (any StoreTransactionWork)?, persisting: Bool)
        throws(StoreWriteError) -> CommitResult
    {
        let isData = write.kind == .data
        let persistence = persisting ? self.persistence : nil
        var staged = StagedCommit()
        staged.changes.commit = lastCommit + 1
        let inPlace = persistence == nil && lazy == nil
        staged.keepsWritten = !inPlace || (isData && hooks.afterStore != nil)
        lock.withLock { stage(&write, into: &staged, inPlace: inPlace) }
        if let persistence, work != nil || !staged.isEmpty {
            let batch = PersistedBatch(
                records: staged.written.map { EntityRecord($0.box) }, removed: staged.changes.removed,
                collections: staged.collections, removedCollections: staged.removedCollections)
            try CommitScope.run(self) { () throws(StoreWriteError) in
                try persistence.write(batch, alongside: work)
            }
        }
        if !inPlace { lock.withLock { publish(staged) } }
        lastCommit += 1
        if isData {
            if let after = hooks.afterStore, !staged.written.isEmpty {
                CommitScope.run(self) { for entry in staged.written { after(EntityRecord(entry.box)) } }
            }
            notify(staged.changes)
        }
        return CommitResult(
            changes: staged.changes, taskCollection: staged.taskCollection,
            endpointCollection: staged.endpointCollection)
    }

    /// Works out what `write` changes (under the read lock), putting it in place at once when
    /// `inPlace` (an in-memory store with no persistence: nothing can fail after this).
    private func stage(_ write: inout StoreWrite, into staged: inout StagedCommit, inPlace: Bool) {
        stageRemovals(write, into: &staged, inPlace: inPlace)
        for box in write.restored {
            let old = contents.box(box.id)
            if staged.keepsWritten { staged.written.append((box, old)) }
            if inPlace { contents.put(box, replacing: old) }
        }
        if !write.batch.drafts.isEmpty { stageBatch(&write.batch, into: &staged, inPlace: inPlace) }
        if let ingest = write.ingest { stageIngestCollections(ingest, batch: write.batch, into: &staged) }
        if inPlace {
            for collection in staged.collections { contents.putCollection(collection) }
            for id in staged.removedCollections { contents.removeCollection(id) }
        } else if let backing = contents.backing {
            // Readers meanwhile load these from the persistence, as it is before the commit and
            // after it, never a cached copy older than the file.
            for entry in staged.written { backing.cache?.remove(entry.box.id) }
            for id in staged.changes.removed { backing.cache?.remove(id) }
        }
    }

    /// Removed ids (those that exist) and collections, and the collections the ids leave.
    private func stageRemovals(_ write: StoreWrite, into staged: inout StagedCommit, inPlace: Bool) {
        if write.removesEverything {
            staged.changes.removed = contents.allSortedIDs()
            staged.removedCollections = contents.orderedCollections(kind: nil).map(\.id)
            staged.removesEverything = true
            if inPlace { contents = StoreContents() }
            return
        }
        for id in write.removedCollections where contents.collection(id: id) != nil {
            staged.removedCollections.append(id)
        }
        guard !write.removed.isEmpty else { return }
        staged.changes.removed = write.removed.filter { contents.containsID($0) }
        guard !staged.changes.removed.isEmpty else { return }
        if inPlace { for id in staged.changes.removed { contents.remove(id) } }
        // A removed id leaves every collection it is in.
        let gone = Set(staged.changes.removed)
        for var collection in contents.orderedCollections(kind: nil)
        where !staged.removedCollections.contains(collection.id) {
            let removed = collection.positions.remove(gone)
            guard removed > 0 else { continue }
            if let total = collection.total { collection.total = max(0, total - removed) }
            staged.collections.append(collection)
        }
    }

    /// Merges the batch's drafts into the stored records.
    private func stageBatch(_ batch: inout PendingBatch, into staged: inout StagedCommit, inPlace: Bool) {
        // An in-memory store cannot fail to take the records: each is put in place as soon as
        // it is worked out, in one pass over the batch while its box is in cache. Otherwise
        // every new record is worked out first, without touching the contents, and put in place
        // once the persistence has written it.
        let keepWritten = staged.keepsWritten
        // An empty in-memory store takes the batch's drafts as its records (every draft is a
        // new record), instead of inserting them one by one into a second table, and what the
        // batch tallied of them while each was in cache: their ids, counts and indexed ones
        // (an ingestor that began on an empty store has its batch tally them).
        if inPlace && contents.records.isEmpty && batch.tallies {
            if keepWritten { batch.forEachDraft { staged.written.append(($0, nil)) } }
            contents.records = batch.drafts
            batch.drafts = RecordTable()
            contents.prefixCounts = batch.counts
            staged.changes.inserted = batch.ids
            contents.adoptIndexes(of: &batch)
            return
        }
        if keepWritten { staged.written.reserveCapacity(staged.written.count + batch.drafts.count) }
        if inPlace { contents.records.reserveCapacity(contents.records.count + batch.drafts.count) }
        staged.changes.inserted.reserveCapacity(batch.drafts.count)
        // A lazy store loads the batch's stored records in one go.
        let loaded = contents.backing?.boxes(ids: batch.drafts.boxes.map(\.id))
        batch.forEachDraft { draft in
            guard let old = loaded.map({ $0[draft.id] }) ?? contents.records[draft.key] else {
                // A new record: the draft itself becomes the stored box.
                staged.changes.inserted.append(draft.id)
                if keepWritten { staged.written.append((draft, nil)) }
                if inPlace { contents.put(draft, replacing: nil) }
                return
            }
            if let incoming = draft.dataVersion, let stored = old.dataVersion, incoming <= stored { return }
            let (box, changed) = old.merged(with: draft)
            if !changed.isEmpty {
                staged.changes.updated.append(ChangeSet.Update(id: draft.id, fields: changed))
            } else if box.dataVersion == old.dataVersion {
                return
            }
            // (Same fields at a newer version: keep the version, or a later response at the old
            // version would be applied over it.)
            if keepWritten { staged.written.append((box, old)) }
            if inPlace { contents.put(box, replacing: old) }
        }
    }

    /// An ingest's collections: the task's (unless the store does not keep it: then only in the
    /// result), the endpoint's, and the oldest task collections past ``taskCollectionLimit``.
    private func stageIngestCollections(
        _ ingest: StoreWrite.Ingest, batch: PendingBatch, into staged: inout StagedCommit
    ) {
        let task = EntityCollection(
            id: newID(prefix: "c"), displayIdentifier: ingest.taskID ?? newID(prefix: "t"), kind: .task,
            positions: CollectionPositions(distinct: batch.taskItems), total: batch.taskItems.count)
        staged.taskCollection = task
        if ingest.keepsTaskCollection { staged.collections.append(task) }
        if let endpoint = ingest.endpoint {
            let collection = updatedEndpointCollection(endpoint, batch: batch)
            staged.collections.append(collection)
            staged.endpointCollection = collection
        }
        guard ingest.keepsTaskCollection, let limit = taskCollectionLimit, var kept = contents.taskCollectionIDs()
        else {
            return
        }
        kept.append(task.id)
        if kept.count > limit {
            let dropped = kept.prefix(kept.count - limit)
            staged.removedCollections.append(contentsOf: dropped)
            kept.removeFirst(dropped.count)
        }
        staged.taskCollectionIDs = kept
    }

    /// The endpoint's collection with this response's items, by the rules of "Collections over
    /// time" (`PendingBatch.endpointCollection(_:existing:)`).
    private func updatedEndpointCollection(_ endpoint: String, batch: PendingBatch) -> EntityCollection {
        batch.endpointCollection(endpoint, existing: contents.collection(displayIdentifier: endpoint))
    }

    /// Puts a change the persistence has written in place (under the read lock).
    private func publish(_ staged: StagedCommit) {
        if let backing = contents.backing {
            // (Readers may have loaded any of these from the persistence while it was writing,
            // as they were before the commit: each is put or dropped again here.)
            let written = staged.written
            if let capacity = backing.cache?.capacity, written.count > capacity {
                // A batch bigger than a lazy store's cache: only its last records are kept.
                let skipped = written.count - capacity
                for entry in written.prefix(skipped) { backing.cache?.remove(entry.box.id) }
                for entry in written.dropFirst(skipped) { backing.cache?.put(entry.box) }
            } else {
                for entry in written { backing.cache?.put(entry.box) }
            }
            if staged.removesEverything {
                backing.cache?.removeAll()
            } else {
                for id in staged.changes.removed { backing.cache?.remove(id) }
            }
            if let kept = staged.taskCollectionIDs {
                backing.taskCollectionIDs = kept
            } else if !staged.removedCollections.isEmpty {
                backing.taskCollectionIDs = nil  // read again when next needed
            }
            return
        }
        if staged.removesEverything {
            contents = StoreContents()
        } else {
            for id in staged.changes.removed { contents.remove(id) }
        }
        for entry in staged.written { contents.put(entry.box, replacing: entry.old) }
        for collection in staged.collections { contents.putCollection(collection) }
        for id in staged.removedCollections { contents.removeCollection(id) }
    }
}

/// What a commit worked out, between staging it and putting it in place.
struct StagedCommit {
    var changes = ChangeSet()
    /// Whether ``written`` is kept (for the persistence, the `afterStore` hook, or a later put).
    var keepsWritten = true
    /// The records inserted or changed, and the ones they replace.
    var written: [(box: EntityBox, old: EntityBox?)] = []
    var removesEverything = false
    /// Collections made or changed.
    var collections: [EntityCollection] = []
    var removedCollections: [String] = []
    var taskCollection: EntityCollection?
    var endpointCollection: EntityCollection?
    /// The task collections kept after an ingest, oldest first (nil when not worked out).
    var taskCollectionIDs: [String]?

    var isEmpty: Bool {
        written.isEmpty && changes.removed.isEmpty && collections.isEmpty && removedCollections.isEmpty
    }
}

/// Which stores the current thread is committing to (running a hook or transaction work of):
/// a write to one of them from there would wait for itself, and fails instead.
enum CommitScope {
    @TaskLocal static var stores: [ObjectIdentifier] = []

    static func isCommitting(_ store: Store) -> Bool {
        let current = stores
        return !current.isEmpty && current.contains(ObjectIdentifier(store))
    }

    static func run<E: Error>(_ store: Store, _ body: () throws(E) -> Void) throws(E) {
        var failure: E?
        $stores.withValue(stores + [ObjectIdentifier(store)]) {
            do throws(E) { try body() } catch { failure = error }
        }
        if let failure { throw failure }
    }
}
