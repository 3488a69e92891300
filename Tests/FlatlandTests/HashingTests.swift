import Testing

@testable import Flatland

/// Ids and index values carry their hash and give `Set` and `Dictionary` a mix of it with the
/// table's seed: equal keys must land together, distinct ones must all be kept and found, through
/// growth and rehashing.
@Suite struct HashingTests {
    @Test func recordKeysFillAndFindLargeTables() {
        let ids = (0..<20_000).map { "u-\($0)" }
        var set = Set<RecordKey>()
        var table: [RecordKey: Int] = [:]
        for (i, id) in ids.enumerated() {
            set.insert(RecordKey(id))
            table[RecordKey(id)] = i
        }
        #expect(set.count == ids.count)
        #expect(table.count == ids.count)
        #expect(ids.enumerated().allSatisfy { table[RecordKey($0.element)] == $0.offset })
        #expect(!set.contains(RecordKey("u-20000")))
        // Equal keys made separately: the same raw hash for any seed.
        #expect(RecordKey("u-7")._rawHashValue(seed: 12345) == RecordKey("u-7")._rawHashValue(seed: 12345))
        #expect(RecordKey("u-7")._rawHashValue(seed: 1) != RecordKey("u-7")._rawHashValue(seed: 2))
    }

    @Test func idHashesSpreadOverEveryByteAndLength() {
        // Every length up to past several words, and ids that differ in one byte anywhere: a
        // 64-bit hash that reads every byte gives each its own value.
        var ids: [String] = (0...40).map { String(repeating: "a", count: $0) }
        let base = Array("u-kglDkl0voisKeZC16A5hOxjNlN4JTtka".utf8)
        for position in base.indices {
            var bytes = base
            bytes[position] ^= 1
            ids.append(String(decoding: bytes, as: UTF8.self))
        }
        ids.append(String(decoding: base, as: UTF8.self))
        ids += (0..<20_000).map { "d-\($0)" }
        #expect(Set(ids.map { RecordKey($0).hash }).count == ids.count)
        #expect(RecordKey("u-1").hash == RecordKey(String("xu-1".dropFirst())).hash)
    }

    @Test func idsAreTheSameKeyWhenTheirBytesAre() {
        // Canonically equivalent text in other bytes is another id, as it is in SQL and on the wire.
        let composed = "u-\u{E9}"
        let decomposed = "u-e\u{301}"
        #expect(composed == decomposed)
        #expect(RecordKey(composed) != RecordKey(decomposed))
        #expect(Set([RecordKey(composed), RecordKey(decomposed), RecordKey("u-\u{E9}")]).count == 2)
    }

    @Test func indexValuesOfStringsAreTheSameWhenTheirBytesAre() {
        #expect(IndexValue("zo\u{EB}@example.com") != IndexValue("zoe\u{308}@example.com"))
        #expect(IndexValue("a@b") == IndexValue(String("xa@b".dropFirst())))
        #expect(IndexValue("a@b").hashValue == IndexValue(String("xa@b".dropFirst())).hashValue)
        #expect(IndexValue("a@b" as String?) == IndexValue("a@b"))
        #expect(IndexValue("") == IndexValue(""))
        #expect(IndexValue("1") != IndexValue(1))
        #expect(IndexValue(1) == IndexValue(1))
    }

    @Test func indexValuesOfStringsAndOthers() {
        var table: [IndexValue: Int] = [:]
        for i in 0..<5_000 {
            table[IndexValue("mail-\(i)@example.com")] = i
            table[IndexValue(i)] = -i
        }
        #expect(table.count == 10_000)
        #expect(table[IndexValue("mail-4999@example.com")] == 4999)
        #expect(table[IndexValue(4999)] == -4999)
        #expect(table[IndexValue("4999")] == nil)
    }
}
