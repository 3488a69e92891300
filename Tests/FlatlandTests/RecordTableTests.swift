import Testing

@testable import Flatland

/// The table of records that a batch gathers and a store keeps: every operation checked against
/// a dictionary, with hashes made to collide so that probing and removal meet long runs.
@Suite struct RecordTableTests {
    /// A deterministic generator (SplitMix64), so that a failure repeats.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z &>> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z &>> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z &>> 31)
        }
    }

    /// Keys whose hashes fall on a few home slots (the index takes bits 32 and up), or are the
    /// same hash outright, as a table of any size sees them.
    static func key(_ n: Int, collisions: Bool) -> RecordKey {
        let id = "u-\(n)"
        guard collisions else { return RecordKey(id) }
        let hash = n % 5 == 0 ? 42 : (n % 3) << 32 | n
        return RecordKey(id, hash: hash)
    }

    static func box(_ key: RecordKey) -> EntityBox { UntypedBox(key: key, prefix: "u") }

    func check(_ table: RecordTable, against model: [String: EntityBox], keys: [RecordKey]) {
        #expect(table.count == model.count)
        #expect(Set(table.boxes.map(\.id)) == Set(model.keys))
        for key in keys {
            let found = table[key]
            #expect(found === model[key.id], "lookup of \(key.id)")
            let byBytes = key.id.utf8.withContiguousStorageIfAvailable {
                table.box(id: UnsafeRawBufferPointer($0), hash: key.hash)
            }
            #expect(byBytes! === model[key.id], "lookup of \(key.id) by its bytes")
        }
    }

    @Test(arguments: [false, true])
    func agreesWithADictionaryThroughInsertsReplacementsAndRemovals(collisions: Bool) {
        var rng = SplitMix(state: collisions ? 7 : 11)
        let keys = (0..<600).map { Self.key($0, collisions: collisions) }
        var table = RecordTable()
        var model: [String: EntityBox] = [:]
        for step in 0..<6_000 {
            let key = keys[Int.random(in: 0..<keys.count, using: &rng)]
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let box = Self.box(key)
                let existing = table.insert(box)
                #expect(existing === model[key.id])
                if existing == nil { model[key.id] = box }
            case 4..<6:
                let box = Self.box(key)
                #expect(table.put(box) === model[key.id])
                model[key.id] = box
            default:
                #expect(table.remove(key) === model.removeValue(forKey: key.id))
            }
            // A full check now and then, and through the small table's linear search.
            if step % 500 == 0 || table.count < RecordTable.indexedFrom + 2 {
                check(table, against: model, keys: keys)
            }
        }
        check(table, against: model, keys: keys)
        // Emptied completely, then filled again.
        for key in keys { _ = table.remove(key) }
        #expect(table.isEmpty)
        for key in keys.prefix(40) { #expect(table.insert(Self.box(key)) == nil) }
        #expect(table.count == 40)
        #expect(keys.prefix(40).allSatisfy { table[$0]?.id == $0.id })
        #expect(keys.dropFirst(40).allSatisfy { table[$0] == nil })
    }

    @Test func keepsTheOrderOfAdditionAndMovesTheLastIntoARemovedPlace() {
        var table = RecordTable()
        let keys = (0..<100).map { RecordKey("d-\($0)") }
        for key in keys { #expect(table.insert(Self.box(key)) == nil) }
        #expect(table.boxes.map(\.id) == keys.map(\.id))
        // Putting a record in place of another keeps its position.
        table.put(Self.box(keys[10]))
        #expect(table.boxes[10].id == "d-10")
        #expect(table.remove(keys[3])?.id == "d-3")
        #expect(table.boxes[3].id == "d-99")
        #expect(table.boxes.count == 99)
        #expect(table[keys[99]]?.id == "d-99")
    }

    @Test func reservingCapacityIndexesWhatIsThere() {
        var table = RecordTable()
        let keys = (0..<10).map { RecordKey("s-\($0)") }
        for key in keys { _ = table.insert(Self.box(key)) }
        table.reserveCapacity(1_000)
        #expect(keys.allSatisfy { table[$0]?.id == $0.id })
        for n in 10..<1_000 { _ = table.insert(Self.box(RecordKey("s-\(n)"))) }
        #expect(table.count == 1_000)
        #expect((0..<1_000).allSatisfy { table[RecordKey("s-\($0)")]?.id == "s-\($0)" })
    }
}
