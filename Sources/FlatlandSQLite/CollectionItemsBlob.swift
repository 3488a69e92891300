@_spi(FlatlandInternal) import Flatland

/// A collection's positions as one blob in `collections.items` (schema version 3): what replaced
/// a row per position in `collection_items`, which files of older versions still hold and which
/// is still read for a collection whose `items` is NULL.
///
/// Layout (integers as LEB128 varints): a format byte (1); the number of distinct ids, then each
/// id as its UTF-8 length and bytes; then 0 when position `i` holds id `i` (every position a
/// different id, none empty), or 1, the number of positions, and each position's index into the
/// ids plus one (0: no item). A page of 100,000 positions over 1,000 ids is then about 250 KB
/// in one row, where it was 100,000 rows.
enum CollectionItemsBlob {
    static let format: UInt8 = 1

    static func encode(_ positions: CollectionPositions) -> [UInt8] {
        var out: [UInt8] = [format]
        out.reserveCapacity(16 + positions.ids.count * 40 + (positions.slots?.count ?? 0) * 2)
        varint(positions.ids.count, &out)
        for id in positions.ids {
            var id = id
            id.withUTF8 { bytes in
                varint(bytes.count, &out)
                out.append(contentsOf: bytes)
            }
        }
        guard let slots = positions.slots else {
            out.append(0)
            return out
        }
        out.append(1)
        varint(slots.count, &out)
        for slot in slots { varint(Int(slot), &out) }
        return out
    }

    /// The positions in `bytes`; nil when they are not a blob of this layout (a damaged file).
    static func decode(_ bytes: [UInt8]) -> CollectionPositions? {
        var reader = Reader(bytes: bytes)
        guard reader.byte() == format, let idCount = reader.varint(), idCount <= bytes.count else { return nil }
        var ids: [String] = []
        ids.reserveCapacity(idCount)
        for _ in 0..<idCount {
            guard let length = reader.varint(), let id = reader.string(length) else { return nil }
            ids.append(id)
        }
        var slots: [UInt32]?
        switch reader.byte() {
        case 0: slots = nil
        case 1:
            guard let count = reader.varint(), count <= bytes.count else { return nil }
            var read: [UInt32] = []
            read.reserveCapacity(count)
            for _ in 0..<count {
                guard let slot = reader.varint(), slot <= UInt32.max else { return nil }
                read.append(UInt32(slot))
            }
            slots = read
        default: return nil
        }
        guard reader.atEnd else { return nil }
        return CollectionPositions(ids: ids, slots: slots)
    }

    private static func varint(_ value: Int, _ out: inout [UInt8]) {
        var v = UInt64(value)
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        /// A varint of at most 9 bytes (values below 2^63).
        mutating func varint() -> Int? {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 63, by: 7) {
                guard let b = byte() else { return nil }
                value |= UInt64(b & 0x7F) << UInt64(shift)
                if b & 0x80 == 0 { return Int(value) }
            }
            return nil
        }

        mutating func string(_ length: Int) -> String? {
            guard length <= bytes.count - offset else { return nil }
            defer { offset += length }
            // Ill-formed UTF-8 is damage (every id was a Swift string), not text to repair.
            return String(validating: bytes[offset..<offset + length], as: UTF8.self)
        }
    }
}
