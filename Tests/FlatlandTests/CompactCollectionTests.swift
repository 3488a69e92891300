@_spi(FlatlandInternal) import Flatland
import FlatlandFixtures
import FlatlandJSON
import Testing

/// Collections keep each distinct id once and positions as small indexes: these check that the
/// public behaviour is the one of a plain list of positions, whatever pages arrive.
@Suite("Compact collections")
struct CompactCollectionTests {
    /// The rules of "Collections over time" on a plain `[String?]`: what the collection held
    /// before it was compact.
    static func reference(_ items: inout [String?], page: [String?], offset: Int, total: Int?) {
        for (i, id) in page.enumerated() {
            let position = offset + i
            if items.count <= position { items += Array(repeating: nil, count: position + 1 - items.count) }
            items[position] = id
        }
        if let total, items.count > total { items.removeSubrange(total...) }
    }

    /// Pages at random offsets, of ids from a small pool (so ids repeat within and across pages),
    /// with elements that are not entities, overwrites, gaps, and totals that shrink and grow:
    /// the endpoint's collection equals the plain list after every page, in memory and in SQLite.
    @Test(arguments: StoreBackend.allCases, [1 as UInt64, 2, 3])
    func pagesOverABoundedPoolMatchAPlainList(backend: StoreBackend, seed: UInt64) throws {
        let store = try backend.store()
        var random = SplitMix64(seed: seed)
        var expected: [String?] = []
        for round in 0..<25 {
            let offset = Int.random(in: 0...60, using: &random)
            let count = Int.random(in: 0...12, using: &random)
            let total: Int? =
                Bool.random(using: &random) ? nil : max(0, offset + count + Int.random(in: -8...20, using: &random))
            var page: [String?] = []
            var elements: [String] = []
            for _ in 0..<count {
                if Int.random(in: 0..<6, using: &random) == 0 {
                    elements.append(#"{"note":"not an entity"}"#)
                    page.append(nil)
                } else {
                    let id = "x-\(Int.random(in: 0..<7, using: &random))"
                    elements.append(#"{"uuid":"\#(id)","round":\#(round)}"#)
                    page.append(id)
                }
            }
            let totalMember = total.map { #""total":\#($0),"# } ?? ""
            let text =
                #"{"offset":\#(offset),"count":\#(count),\#(totalMember)"data":[\#(elements.joined(separator: ","))]}"#
            let result = try store.ingest(Array(text.utf8), endpoint: "/pool?offset=\(offset)")
            Self.reference(&expected, page: page, offset: offset, total: total)
            let collection = try #require(store.collection(displayIdentifier: "/pool"))
            #expect(collection.items == expected, "round \(round)")
            #expect(collection.count == expected.count)
            #expect((0..<collection.count).map { collection[$0] } == expected)
            #expect(collection.knownItems == expected.compactMap { $0 })
            #expect(result.endpointCollection == collection)
            // The task's collection: this response's entities, each once, in order.
            var seen: Set<String> = []
            #expect(result.taskCollection.items == page.compactMap { $0 }.filter { seen.insert($0).inserted })
        }
    }

    /// A list given whole replaces the collection; duplicates in a page stay at their positions.
    @Test(arguments: StoreBackend.allCases) func duplicatesKeepTheirPositions(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(
            Array(#"{"offset":0,"total":5,"data":[{"uuid":"x-1"},{"uuid":"x-2"},{"uuid":"x-1"},{"uuid":"x-1"}]}"#.utf8),
            endpoint: "/dup")
        #expect(store.collection(displayIdentifier: "/dup")?.items == ["x-1", "x-2", "x-1", "x-1"])
        try store.ingest(Array(#"[{"uuid":"x-3"},{"uuid":"x-2"}]"#.utf8), endpoint: "/dup")
        let whole = try #require(store.collection(displayIdentifier: "/dup"))
        #expect(whole.items == ["x-3", "x-2"])
        #expect(whole.total == 2)
    }

    /// Removing an entity removes every position holding it, and the total follows.
    @Test(arguments: StoreBackend.allCases) func removingAnEntityRemovesEveryPositionOfIt(backend: StoreBackend)
        throws
    {
        let store = try backend.store()
        try store.ingest(
            Array(
                #"{"offset":0,"total":6,"data":[{"uuid":"x-1"},{"uuid":"x-2"},{"uuid":"x-1"},{"note":0},{"uuid":"x-3"}]}"#
                    .utf8),
            endpoint: "/rm")
        try store.remove(["x-1"])
        let collection = try #require(store.collection(displayIdentifier: "/rm"))
        #expect(collection.items == ["x-2", nil, "x-3"])
        #expect(collection.total == 4)
    }

    /// Two collections are equal when their positions are, however each was built.
    @Test func equalityIsByPositions() {
        let built = EntityCollection(id: "c-1", displayIdentifier: "/e", kind: .endpoint, items: ["a", "b"], total: 2)
        var changed = EntityCollection(
            id: "c-1", displayIdentifier: "/e", kind: .endpoint, items: ["a", "a", nil], total: 2)
        #expect(built != changed)
        changed = EntityCollection(id: "c-1", displayIdentifier: "/e", kind: .endpoint, items: ["a", "b"], total: 2)
        #expect(built == changed)
        #expect(built.hashValue == changed.hashValue)
        let gaps = EntityCollection(
            id: "c-1", displayIdentifier: "/e", kind: .endpoint, items: [nil, "a", nil, "a"], total: nil)
        #expect(gaps.items == [nil, "a", nil, "a"])
        #expect(gaps.knownItems == ["a", "a"])
        #expect(gaps.count == 4)
        #expect(gaps[0] == nil && gaps[3] == "a")
    }

    /// A list one response made keeps no spare capacity (an array grown by appending keeps up
    /// to half of its last doubling): the task's list and a new endpoint's, a page or not.
    @Test func listsMadeByOneResponseAreSizedToFit() throws {
        let store = Store(registry: try EntityRegistry([]))
        let ids = (0..<1100).map { "u-fit\($0)" }
        let array = "[" + ids.map { #"{"uuid":"\#($0)"}"# }.joined(separator: ",") + "]"
        let page = #"{"offset":0,"total":1100,"data":"# + array + "}"
        try store.ingest(Array(array.utf8), endpoint: "/list")
        try store.ingest(Array(page.utf8), endpoint: "/paged?offset=0")
        let lists = store.collections
        #expect(lists.count == 4)
        for list in lists {
            #expect(list.count == 1100 && list.knownItems == ids)
            #expect(
                list.positions.ids.capacity <= list.count + list.count / 8, "\(list.kind) \(list.displayIdentifier)")
        }
    }
}
