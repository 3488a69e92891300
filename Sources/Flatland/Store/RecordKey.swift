/// A record id as a dictionary key, with its hash worked out once.
///
/// Every id goes through several tables on its way into the store (the response's batch, the
/// records, the ids of its type), and a `String` key is hashed again for each, then compared
/// byte by byte with every other id its probe meets. This key carries the id's own (seeded)
/// `hashValue`, made when the key is, and compares hashes before text.
struct RecordKey: Hashable, Sendable {
    let id: String
    let hash: Int

    init(_ id: String) {
        self.id = id
        hash = id.hashValue
    }

    static func == (a: RecordKey, b: RecordKey) -> Bool { a.hash == b.hash && a.id == b.id }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}
