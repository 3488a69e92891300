/// A record id as a dictionary key, with its hash worked out once.
///
/// Every id goes through several tables on its way into the store (the response's batch and
/// its index, the records), and a `String` key is hashed again for each, then compared
/// byte by byte with every other id its probe meets. This key carries a hash of the id's UTF-8
/// bytes, made when the key is (``idHash(_:)``), and compares hashes before text: two ids are the
/// same key when their bytes are the same, as they are in SQL and on the wire.
struct RecordKey: Hashable, Sendable {
    let id: String
    let hash: Int

    init(_ id: String) {
        self.id = id
        hash = idHash(of: id)
    }

    /// A key whose hash was already worked out from the same bytes (``idHash(_:)``).
    init(_ id: String, hash: Int) {
        self.id = id
        self.hash = hash
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

/// ``idHash(_:)`` of a string's UTF-8.
func idHash(of text: String) -> Int {
    text.utf8.withContiguousStorageIfAvailable(idHash) ?? Array(text.utf8).withUnsafeBufferPointer(idHash)
}

/// This process's random key for ``idHash(_:)``: ids come from servers, so where they land in a
/// table must not be predictable from outside.
private let idHashKey = (UInt64.random(in: .min ... .max), UInt64.random(in: .min ... .max))

/// A keyed hash of an id's bytes, a few multiplications per 8 bytes instead of a whole SipHash
/// run: ids are short, made once each and hashed on the hot path of every ingest.
@inline(__always)
func idHash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    @inline(__always) func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }
    let key = idHashKey
    var h = key.0 ^ UInt64(truncatingIfNeeded: bytes.count) &* 0x9E37_79B9_7F4A_7C15
    guard let base = bytes.baseAddress else { return Int(truncatingIfNeeded: fold(h, key.1)) }
    let raw = UnsafeRawPointer(base)
    var i = 0
    while i + 8 <= bytes.count {
        h = fold(h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self), key.1 ^ 0xA076_1D64_78BD_642F)
        i += 8
    }
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while i < bytes.count {
        tail |= UInt64(bytes[i]) &<< shift
        shift += 8
        i += 1
    }
    h = fold(h ^ tail, key.1 ^ 0xE703_7ED1_A0B4_28DB)
    return Int(truncatingIfNeeded: fold(h, key.0 ^ 0x8EBC_6AF0_9C88_C6E3))
}
