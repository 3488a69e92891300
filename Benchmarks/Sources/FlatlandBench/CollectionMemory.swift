import CAllocationCount
@_spi(FlatlandInternal) import Flatland

/// The heap bytes a store's collections cost per position (issue 25 item 2), for
/// `collection_bytes_per_position` in `flatland bench`.
///
/// The workload is ingested once; then each of its collections (the task's and the endpoint's) is
/// built again from its items while glibc's count of bytes in use (`mallinfo2().uordblks`, exact
/// and with nothing interposed) is read before and after, the copies held alive. The ids are the
/// store's own strings, as in an ingest (a collection takes its ids from the records' keys), so
/// the difference is what a collection adds beside its entities: each distinct id once in its
/// list, and a 4-byte slot per position where ids repeat, sized to fit as the store keeps a list
/// that one response made (a list that grows page after page keeps the spare capacity of its
/// last doubling: up to 16 bytes more per distinct id). The temporary item arrays are freed
/// before the second reading, so they do not count. Nil where glibc's count is not available.
enum CollectionMemory {
    struct Result {
        var bytes: Int
        var positions: Int
        var collections: Int

        /// Bytes per position, over all the collections measured.
        var bytesPerPosition: Double { Double(bytes) / Double(max(positions, 1)) }
    }

    static func measure(_ workload: Workload) throws -> Result? {
        guard flatland_heap_bytes_in_use() >= 0, let ingest = workload.ingest else { return nil }
        let store = try Bench.ingestedStore(workload, ingest)
        let collections = store.collections
        var rebuilt: [EntityCollection] = []
        rebuilt.reserveCapacity(collections.count)
        let reservedAt = flatland_heap_bytes_in_use()
        for collection in collections {
            // As the store keeps a list one response made (sized to fit).
            var positions = CollectionPositions(collection.items)
            positions.shrinkToFit()
            rebuilt.append(
                EntityCollection(
                    id: collection.id, displayIdentifier: collection.displayIdentifier, kind: collection.kind,
                    positions: positions, total: collection.total))
        }
        let after = flatland_heap_bytes_in_use()
        let positions = rebuilt.reduce(0) { $0 + $1.count }
        return withExtendedLifetime((store, rebuilt)) {
            Result(bytes: Int(after) - Int(reservedAt), positions: positions, collections: rebuilt.count)
        }
    }
}
