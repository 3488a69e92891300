import Flatland
import FlatlandJSON
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a store's collections hold per position: one page of `positions` elements whose ids
/// come from a pool of `pool` entities (a large list over a bounded set, as a feed or a
/// re-sorted list is) is ingested with an endpoint, so the store keeps its task and endpoint
/// collections; the heap bytes the store holds after the ingest more than before it (glibc's
/// `malloc_info`: in use plus mapped) are divided by the collections' positions, all together.
/// The figure is an upper bound for the collections: it also counts the pool's records.
enum CollectionMemory {
    struct Result {
        var positions: Int
        var bytesPerPosition: Double
    }

    static func measure(positions: Int = 1_000_000, pool: Int = 1_000) throws -> Result? {
        #if canImport(Glibc)
            let document = page(positions: positions, pool: pool)
            let store = Store()
            guard let before = heapBytes() else { return nil }
            try store.ingest(document, endpoint: "/bench/collections")
            guard let after = heapBytes() else { return nil }
            let count = store.collections.reduce(0) { $0 + $1.count }
            withExtendedLifetime(store) {}
            guard count >= positions else {
                throw CLIFailure.invalid("the collections hold \(count) positions, expected \(positions) or more")
            }
            return Result(positions: count, bytesPerPosition: Double(after - before) / Double(count))
        #else
            return nil
        #endif
    }

    /// `{"offset":0,"count":N,"total":N,"data":[{"uuid":"x-…","n":…},…]}` with ids cycling
    /// through the pool.
    static func page(positions: Int, pool: Int) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("offset")
        w.number(0)
        w.key("count")
        w.number(positions)
        w.key("total")
        w.number(positions)
        w.key("data")
        w.beginArray()
        for i in 0..<positions {
            w.beginObject()
            w.key("uuid")
            w.string("x-collection-member-\(i % pool)")
            w.key("n")
            w.number(i % pool)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    #if canImport(Glibc)
        /// Bytes glibc's allocator has handed out and not taken back: from `malloc_info`'s totals
        /// (the arenas' current size less their free chunks, plus mapped blocks). Looked up at
        /// run time (`malloc.h` is not part of Swift's Glibc module); nil when it is not there.
        static func heapBytes() -> Int? {
            typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
            guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "malloc_info"),
                let file = tmpfile()
            else { return nil }
            defer { fclose(file) }
            guard unsafeBitCast(symbol, to: MallocInfo.self)(0, file) == 0 else { return nil }
            fflush(file)
            rewind(file)
            var xml: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let read = fread(&buffer, 1, buffer.count, file)
                guard read > 0 else { break }
                xml += buffer[0..<read]
            }
            let text = String(decoding: xml, as: UTF8.self)
            // The process-wide totals follow the last arena's </heap>.
            guard let end = text.range(of: "</heap>", options: .backwards) else { return nil }
            let totals = text[end.upperBound...]
            func size(_ tag: String) -> Int? {
                guard let start = totals.range(of: tag) else { return nil }
                let rest = totals[start.upperBound...]
                guard let open = rest.range(of: "size=\""), let close = rest[open.upperBound...].firstIndex(of: "\"")
                else { return nil }
                return Int(rest[open.upperBound..<close])
            }
            guard let current = size("<system type=\"current\""), let fast = size("<total type=\"fast\""),
                let free = size("<total type=\"rest\""), let mapped = size("<total type=\"mmap\"")
            else { return nil }
            return current - fast - free + mapped
        }
    #endif
}
