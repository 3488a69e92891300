extension Store {
    /// Reads a whole response and applies it as one batch: ``makeIngestor(endpoint:taskID:options:)``,
    /// feeding it the bytes, ``Ingestor/finish()`` and ``commit(_:removing:alongside:)`` in one call.
    ///
    /// - Parameters:
    ///   - bytes: the response body.
    ///   - endpoint: the request's path and query, for the endpoint's collection.
    ///   - taskID: the display identifier of the task's collection (a new id when nil).
    ///   - options: how to read it, its envelope among them.
    /// - Throws: ``IngestError``; the store is then exactly as it was.
    @discardableResult
    public func ingest<Bytes: Sequence<UInt8>>(
        _ bytes: Bytes, endpoint: String? = nil, taskID: String? = nil, options: IngestOptions = IngestOptions()
    ) throws(IngestError) -> IngestResult {
        let ingestor = makeIngestor(endpoint: endpoint, taskID: taskID, options: options)
        try ingestor.feed(bytes)
        return try commit(ingestor.finish())
    }

    /// An ingestor for one response that arrives in chunks. It reads the store's registry and
    /// hooks and, at the end, what data versions the store holds; it writes nothing: its
    /// ``Ingestor/finish()`` hands back the batch for ``commit(_:removing:alongside:)``.
    public func makeIngestor(endpoint: String? = nil, taskID: String? = nil, options: IngestOptions = IngestOptions())
        -> Ingestor
    {
        Ingestor(context: ingestContext, endpoint: endpoint, taskID: taskID, options: options)
    }

    /// What an ingestor may know of this store.
    var ingestContext: IngestContext {
        IngestContext(
            registry: registry, condition: hooks.condition,
            currentVersion: { id in self.currentVersion(of: id) }, isEmptyInMemory: isEmptyInMemory)
    }

    /// Applies a batch an ingestor finished: every record and collection, or (if persistence
    /// fails) none. With `work`, the persistence runs it in the same transaction (see "Writing to
    /// the store": a sync layer's delta token commits with the page it came with).
    ///
    /// - Throws: ``IngestError``: ``IngestError/Code-swift.struct/misuse`` for a batch already
    ///   committed or made for a store of another registry, or for work the persistence cannot
    ///   run; ``IngestError/Code-swift.struct/persistence`` when the persistence or the work
    ///   failed (``IngestError/underlying`` says which). The store is then unchanged.
    ///
    /// - Parameters:
    ///   - batch: what ``Ingestor/finish()`` handed back; a batch is committed once.
    ///   - removing: ids removed in the same commit (those that exist), from the records and
    ///     from every collection: a sync pull removes the rows the server says are deleted with
    ///     the page that says so.
    ///   - work: rows of the caller's own that the persistence writes in the same transaction.
    @discardableResult
    public func commit(
        _ batch: IngestBatch, removing: [String] = [], alongside work: (any StoreTransactionWork)? = nil
    ) throws(IngestError) -> IngestResult {
        guard batch.registry.hasSameTypes(as: registry) else {
            throw IngestError(code: .misuse, message: "the batch was read for a store of another registry")
        }
        // The batch is handed over: an empty store may take its drafts as its records.
        guard var pending = batch.take() else {
            throw IngestError(code: .misuse, message: "the batch has already been committed")
        }
        do {
            var result = try apply(
                &pending, ingest: (batch.taskID, batch.endpoint, batch.keepsTaskCollection), removing: removing,
                alongside: work)
            result.skipped = batch.skipped
            result.bytes = batch.bytes
            result.page = batch.page
            return result
        } catch {
            throw IngestError(committing: error)
        }
    }
}
