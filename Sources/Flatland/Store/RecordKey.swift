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

    func _rawHashValue(seed: Int) -> Int { mixHash(hash, seed: seed) }
}

/// What `Set` and `Dictionary` ask a key with a precomputed hash for (`Hashable`'s own
/// customization point, `_rawHashValue(seed:)`): the stored hash mixed with the table's seed by
/// a 64-bit finalizer, in which every bit of the result depends on every bit of both, instead
/// of a whole `Hasher` run (seeding, combining, finalizing SipHash) for every lookup and rehash.
@inline(__always)
func mixHash(_ hash: Int, seed: Int) -> Int {
    var x = UInt64(truncatingIfNeeded: hash ^ seed)
    x ^= x &>> 33
    x &*= 0xFF51_AFD7_ED55_8CCD
    x ^= x &>> 33
    x &*= 0xC4CE_B9FE_1A85_EC53
    x ^= x &>> 33
    return Int(truncatingIfNeeded: x)
}
