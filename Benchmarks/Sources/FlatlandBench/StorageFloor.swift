import Flatland
import Foundation

/// References to other records: they share the referenced record's id string.
private protocol SharedReference {}
extension EntityID: SharedReference {}

/// The allocations a store's entities need for their own storage: the floor under the ingest's
/// `mallocs/entity`.
///
/// Every record is taken apart, uncounted, into the parts of its values that can live on the
/// heap: its box, its own id, every string, URL and non-empty array of its fields (ids of other
/// records excepted: they share those records' strings). The parts are then made again from
/// their bytes while the allocator counts, the way any decoder must make them: a string from
/// its UTF-8 (a small string allocates nothing), a URL from a string, an array of its length,
/// one object per box. So the floor is what building the same values costs on this platform,
/// whoever builds them, and the ingest's count above it is the ingest's own overhead.
enum StorageFloor {
    /// What one store's records are made of.
    struct Parts: Equatable {
        /// Records, each a box.
        var records = 0
        /// Strings, the records' own ids among them, with their UTF-8.
        var strings: [[UInt8]] = []
        /// URLs, with the UTF-8 of their absolute strings.
        var urls: [[UInt8]] = []
        /// The lengths of the non-empty arrays.
        var arrays: [Int] = []
    }

    /// The allocations of `store`'s records' own storage, or nil where this build cannot count
    /// them; records are rebuilt one at a time, so the count needs no second copy of the store.
    static func mallocs(of store: some StoreReader) -> Int? {
        var total = 0
        var sink = Sink()
        for id in store.allIDs() {
            guard let record = store.record(id: id) else { continue }
            let parts = self.parts(of: record)
            sink.reserve(for: parts)
            guard let counted = Bench.mallocs({ sink.build(parts) }) else { return nil }
            total += counted
            sink.clear()
        }
        return total
    }

    /// The heap parts of one record.
    static func parts(of record: EntityRecord) -> Parts {
        var parts = Parts(records: 1, strings: [Array(record.id.utf8)])
        switch record.payload {
        case .typed(let entity): collect(entity, into: &parts)
        case .untyped(let fields): collect(fields, into: &parts)
        }
        return parts
    }

    private static func collect(_ value: Any, into parts: inout Parts) {
        switch value {
        case is SharedReference, is Date, is Bool, is Int, is Int64, is Int32, is Double, is Float, is Decimal:
            return
        case let string as String:
            parts.strings.append(Array(string.utf8))
            return
        case let url as URL:
            parts.urls.append(Array(url.absoluteString.utf8))
            return
        default:
            break
        }
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .collection?, .set?, .dictionary?:
            if !mirror.children.isEmpty { parts.arrays.append(mirror.children.count) }
        default:
            break
        }
        for child in mirror.children { collect(child.value, into: &parts) }
    }

    /// Where the parts are rebuilt: room reserved before counting, emptied after.
    private struct Sink {
        final class Box {}

        var boxes: [Box] = []
        var strings: [String] = []
        var urls: [URL?] = []
        var arrays: [[Int]] = []

        mutating func reserve(for parts: Parts) {
            boxes.reserveCapacity(parts.records)
            strings.reserveCapacity(parts.strings.count)
            urls.reserveCapacity(parts.urls.count)
            arrays.reserveCapacity(parts.arrays.count)
        }

        mutating func build(_ parts: Parts) {
            for _ in 0..<parts.records { boxes.append(Box()) }
            for bytes in parts.strings { strings.append(String(decoding: bytes, as: UTF8.self)) }
            for bytes in parts.urls { urls.append(URL(string: String(decoding: bytes, as: UTF8.self))) }
            for count in parts.arrays { arrays.append([Int](repeating: 0, count: count)) }
        }

        mutating func clear() {
            boxes.removeAll(keepingCapacity: true)
            strings.removeAll(keepingCapacity: true)
            urls.removeAll(keepingCapacity: true)
            arrays.removeAll(keepingCapacity: true)
        }
    }
}
