extension PendingBatch {
    /// The endpoint's collection after this batch, by the rules of "Collections over time":
    ///
    /// - a page puts its items at their absolute positions (`offset + index`), other positions
    ///   keep theirs; a total it reports becomes the collection's, and positions at or past it
    ///   are dropped (a later page with a smaller total leaves no stale items behind);
    /// - a response that is not a page is the endpoint's whole list and replaces it, with its
    ///   item count as the total; but a response to a request that selected fields
    ///   (`?fields=name`, see ``Endpoint/fieldSelectionParameters``) is a partial view, and
    ///   leaves an existing list as it is.
    func endpointCollection(_ endpoint: String, existing: EntityCollection?) -> EntityCollection {
        var collection =
            existing
            ?? EntityCollection(
                id: newID(prefix: "c"), displayIdentifier: endpoint, kind: .endpoint, items: [], total: nil)
        guard let slice else {
            if selectsFields, existing != nil { return collection }
            collection.positions = CollectionPositions(distinct: taskItems)
            collection.total = taskItems.count
            return collection
        }
        var lookup = collection.positions.makeLookup()
        for item in slice.items {
            collection.positions.set(item.id, at: slice.offset + item.index, lookup: &lookup)
        }
        if let total = slice.total {
            collection.total = total
            collection.positions.truncate(to: total)
        }
        // (Overwritten or dropped positions may leave ids no position holds.)
        collection.positions.compact()
        // A list made by this response is done growing for now: keep it at its size.
        if existing == nil { collection.positions.shrinkToFit() }
        return collection
    }
}
