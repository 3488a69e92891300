/// A response read to its end, not yet in any store: what ``Ingestor/finish()`` hands back for
/// ``Store/commit(_:removing:alongside:)`` to apply, all of it or nothing.
///
/// ``Store/ingest(_:endpoint:taskID:options:)`` does both steps; the two-step form lets a
/// caller that streams a response (the HTTP layer) decide when to write it. A batch is committed
/// once, to a store of the registry its ingestor was made with.
///
/// A batch may be handed to another task to commit (a sync pull commits one page while the next
/// downloads). It is `Sendable` because its changes are only ever read by the one commit that
/// takes them (`take()`, under the batch's lock); everything else in it is immutable.
public final class IngestBatch: @unchecked Sendable {
    /// The changes, read only by the commit that took them (`take()`).
    private var pending: PendingBatch
    /// Whether a commit has taken the changes.
    private var taken = false
    private let lock = Lock()
    /// The registry the drafts were decoded with.
    let registry: EntityRegistry
    /// The display identifier of the task's collection (a new id when nil).
    public let taskID: String?
    /// The non-fielded endpoint, when the response came from one.
    public let endpoint: String?
    /// Entities left out under ``IngestOptions/BadEntityPolicy/skipAndReport``.
    public let skipped: [IngestError]
    /// Bytes read.
    public let bytes: Int
    /// The page the response was, if any.
    public let page: IngestResult.Page?
    /// Whether the store keeps the task collection (``IngestOptions/keepsTaskCollection``).
    let keepsTaskCollection: Bool

    init(
        pending: consuming PendingBatch, registry: EntityRegistry, taskID: String?, endpoint: String?,
        skipped: [IngestError], bytes: Int, keepsTaskCollection: Bool
    ) {
        page = pending.slice.map {
            IngestResult.Page(offset: $0.offset, count: $0.count, total: $0.total, nextLink: $0.nextLink)
        }
        self.pending = pending
        self.registry = registry
        self.taskID = taskID
        self.endpoint = endpoint
        self.skipped = skipped
        self.bytes = bytes
        self.keepsTaskCollection = keepsTaskCollection
    }

    /// The number of entities the batch holds, each once (0 once committed).
    public var entityCount: Int { lock.withLock { taken ? 0 : pending.drafts.count } }

    /// The changes, handed over once: nil when a commit took them already.
    func take() -> PendingBatch? {
        lock.withLock {
            guard !taken else { return nil }
            taken = true
            var changes = PendingBatch()
            swap(&changes, &pending)
            return changes
        }
    }
}

/// What an ingestor may know of the store its batch is meant for: nothing it could write to.
struct IngestContext {
    /// The types to decode.
    let registry: EntityRegistry
    /// The store's condition hook, asked for each entity as its object ends.
    let condition: (@Sendable (IncomingEntity) -> Bool)?
    /// The data version the store holds for an id, asked only for entities with a data version.
    let currentVersion: (String) -> Double?
    /// Whether the store is an in-memory store with no records: its batch then tallies what
    /// such a store needs to take the drafts as its records.
    let isEmptyInMemory: Bool
}

extension EntityRegistry {
    /// Whether `other` registers the very same types (not only the same prefixes): drafts
    /// decoded with one are records of the other.
    func hasSameTypes(as other: EntityRegistry) -> Bool {
        types.count == other.types.count && types.allSatisfy { other.types[$0.key] === $0.value }
    }
}
