/// An ordered list of entity ids: what one request returned, or what a paginated endpoint has
/// returned so far.
public struct EntityCollection: Hashable, Sendable {
    /// The collection's own id (`c-…`).
    public let id: String
    /// The secondary identifier it is found by: a task's uuid, or a non-fielded endpoint.
    public let displayIdentifier: String
    /// What kind of collection this is.
    public let kind: Kind
    /// The items by position; `nil` where a position is not known yet (a page not fetched) or
    /// holds something that is not an entity.
    public internal(set) var items: [String?]
    /// The total the server reported for a paginated endpoint, or the item count otherwise.
    public internal(set) var total: Int?

    /// What a collection records.
    public enum Kind: String, Hashable, Sendable {
        /// The top-level entities of one response, in document order.
        case task
        /// Everything a (non-fielded) endpoint has returned, at absolute positions.
        case endpoint
    }

    /// A collection; persistence uses this to give back what it stored.
    public init(id: String, displayIdentifier: String, kind: Kind, items: [String?], total: Int?) {
        self.id = id
        self.displayIdentifier = displayIdentifier
        self.kind = kind
        self.items = items
        self.total = total
    }

    /// The ids of the known items, in order, without gaps.
    public var knownItems: [String] { items.compactMap { $0 } }
}
