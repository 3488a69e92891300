extension StoreReader {
    /// The collection of the endpoint that `pathAndQuery` belongs to: its non-fielded form
    /// (``Endpoint/nonFielded(_:ignoring:)``) is worked out here, so
    /// `collection(endpoint: "/users?offset=20&count=10&fields=name")` is `/users`'s collection.
    ///
    /// - Parameters:
    ///   - pathAndQuery: the request's path and query, as it was sent.
    ///   - ignored: the query parameters that do not change an endpoint's collection; pass the
    ///     ingest's ``IngestOptions/ignoredParameters`` when they are not the default.
    public func collection(
        endpoint pathAndQuery: String, ignoring ignored: Set<String> = Endpoint.defaultIgnoredParameters
    ) -> EntityCollection? {
        collection(displayIdentifier: Endpoint.nonFielded(pathAndQuery, ignoring: ignored))
    }
}
