/// What one write to the store changed.
public struct ChangeSet: Sendable, Hashable {
    /// An updated record and the fields whose values changed.
    public struct Update: Sendable, Hashable {
        /// The record's id.
        public var id: String
        /// The JSON keys of the fields whose values changed.
        public var fields: [String]

        /// An update of record `id` in `fields`.
        public init(id: String, fields: [String]) {
            self.id = id
            self.fields = fields
        }
    }

    /// Ids of records that did not exist before.
    public var inserted: [String] = []
    /// Records that existed and changed.
    public var updated: [Update] = []
    /// Ids of records removed.
    public var removed: [String] = []
    /// The number of the commit that made these changes: commits to one store are numbered 1,
    /// 2, 3… in the order they happen, and observers get change sets in that order. (Commits
    /// that change nothing an observer sees are numbered too, so the numbers an observer gets
    /// may skip some.) 0 for a change set made by hand.
    public var commit = 0

    /// An empty change set.
    public init() {}

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && removed.isEmpty }

    /// Every id this change set touches.
    public var ids: [String] { inserted + updated.map(\.id) + removed }

    /// Only the changes to records with this prefix and/or this id.
    public func filtered(prefix: String? = nil, id: String? = nil) -> ChangeSet {
        func keep(_ candidate: String) -> Bool {
            if let id, candidate != id { return false }
            if let prefix, EntityIDFormat.prefix(of: candidate) != prefix { return false }
            return true
        }
        var result = ChangeSet()
        result.commit = commit
        result.inserted = inserted.filter(keep)
        result.updated = updated.filter { keep($0.id) }
        result.removed = removed.filter(keep)
        return result
    }
}
