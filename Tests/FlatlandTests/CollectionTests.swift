import Flatland
import FlatlandJSON
import Testing

@Suite("Collections")
struct CollectionTests {
    @Test(arguments: StoreBackend.allCases) func taskCollectionHoldsTopLevelEntitiesInDocumentOrderOnce(
        backend: StoreBackend
    ) throws {
        let store = try backend.store(registry: try seedRegistry())
        let taskID = EntityID<Session>.generate().rawValue
        let result = try store.ingest(
            bytes(
                #"{"data":[{"uuid":"u-2","friends":[{"uuid":"u-9"}]},{"uuid":"d-1"},{"uuid":"u-1"},{"uuid":"u-2"},3,{"x":{"uuid":"u-5"}}]}"#
            ), taskID: taskID)
        let task = result.taskCollection
        #expect(task.kind == .task)
        #expect(task.displayIdentifier == taskID)
        #expect(task.items == ["u-2", "d-1", "u-1", "u-5"])
        #expect(task.id.hasPrefix("c-"))
        #expect(store.collection(displayIdentifier: taskID) == task)
        #expect(store.collection(id: task.id) == task)
        #expect(result.endpointCollection == nil)
    }

    /// Entities inside envelopes that turn out to be containers are handed down level by level,
    /// in document order, whether the level below has found top-level entities of its own yet or
    /// not; and the same when a small pending budget settles the envelopes early.
    @Test(arguments: [1 << 20, 64])
    func topLevelEntitiesInNestedEnvelopesKeepDocumentOrder(pendingBudget: Int) throws {
        let options = IngestOptions(maxPendingObjectBytes: pendingBudget)
        let store = Store(registry: try seedRegistry())
        let json =
            #"{"wrap":{"list":[{"uuid":"u-1"},{"uuid":"u-2"}],"inner":{"more":[{"uuid":"u-3"},{"uuid":"u-4"}]}},"#
            + #""x":{"uuid":"u-5"},"pad":"\#(String(repeating: "p", count: 100))","#
            + #""wrap2":{"list":[{"uuid":"u-6"},{"uuid":"u-7"}]},"y":[{"uuid":"u-8"}]}"#
        let result = try store.ingest(bytes(json), options: options)
        #expect(result.taskCollection.items == (1...8).map { "u-\($0)" })
    }

    @Test(arguments: StoreBackend.allCases) func eachTaskGetsItsOwnIdentifierWhenNoneIsGiven(backend: StoreBackend)
        throws
    {
        let store = try backend.store()
        let a = try store.ingest(bytes(#"{"uuid":"x-1"}"#))
        let b = try store.ingest(bytes(#"{"uuid":"x-1"}"#))
        #expect(a.taskCollection.displayIdentifier != b.taskCollection.displayIdentifier)
        #expect(a.taskCollection.id != b.taskCollection.id)
        #expect(store.collections(kind: .task).map(\.id) == [a.taskCollection.id, b.taskCollection.id])
    }

    /// A page of the paginated endpoint: `count` items from `offset`; the element at
    /// `hole` (if any) is not an entity.
    static func page(offset: Int, count: Int, total: Int?, hole: Int? = nil) -> (text: String, ids: [String?]) {
        var items: [String] = []
        var ids: [String?] = []
        for i in 0..<count {
            if i == hole {
                items.append(#"{"note":"not an entity"}"#)
                ids.append(nil)
            } else {
                items.append(#"{"uuid":"u-\#(offset + i)","age":\#(offset + i)}"#)
                ids.append("u-\(offset + i)")
            }
        }
        let totalMember = total.map { #""total":\#($0),"# } ?? ""
        return (
            #"{"offset":\#(offset),"count":\#(count),\#(totalMember)"data":[\#(items.joined(separator: ","))]}"#, ids
        )
    }

    @Test(arguments: StoreBackend.allCases) func slicesOutOfOrderLandAtAbsolutePositions(backend: StoreBackend) throws {
        let store = try backend.store(registry: try seedRegistry())
        let endpoint = "/users/friends/?gender=male"
        var expected: [String?] = []
        func place(_ ids: [String?], at offset: Int) {
            if expected.count < offset + ids.count {
                expected += Array(repeating: nil, count: offset + ids.count - expected.count)
            }
            for (i, id) in ids.enumerated() { expected[offset + i] = id }
        }
        // Pages 3, 1, 2 of two items each; page 1's second element is not an entity; page 2
        // does not repeat the total.
        let pages = [(4, 47 as Int?, nil as Int?), (0, 47, 1), (2, nil, nil)]
        var results: [IngestResult] = []
        for (offset, total, hole) in pages {
            let page = Self.page(offset: offset, count: 2, total: total, hole: hole)
            results.append(
                try store.ingest(
                    bytes(page.text), endpoint: "/users/friends/?offset=\(offset)&count=2&gender=male&field=age"))
            place(page.ids, at: offset)
            let collection = try #require(store.collection(displayIdentifier: endpoint))
            #expect(collection.items == expected)
            #expect(collection.total == 47)
            #expect(collection.kind == .endpoint)
        }
        #expect(expected.count == 6)
        #expect(expected[1] == nil)
        #expect(Set(results.compactMap { $0.endpointCollection?.id }).count == 1)
        #expect(results.last?.endpointCollection == store.collection(displayIdentifier: endpoint))
        // Three calls to a paginated endpoint: three task collections and one endpoint collection.
        #expect(store.collections.count == 4)
        #expect(store.collections(kind: .task).count == 3)
        #expect(store.collections(kind: .endpoint).count == 1)
        #expect(store.collections(kind: .task).map(\.items) == [["u-4", "u-5"], ["u-0"], ["u-2", "u-3"]])
    }

    @Test(arguments: StoreBackend.allCases) func aLaterPageOverwritesItsPositions(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(
            bytes(#"{"offset":0,"total":3,"data":[{"uuid":"x-1"},{"uuid":"x-2"}]}"#), endpoint: "/x?offset=0")
        try store.ingest(
            bytes(#"{"offset":1,"total":3,"data":[{"uuid":"x-9"},{"uuid":"x-3"}]}"#), endpoint: "/x?offset=1")
        #expect(store.collection(displayIdentifier: "/x")?.items == ["x-1", "x-9", "x-3"])
    }

    /// The collection keeps a slot for every position before its last: an absurd offset is an
    /// error, not an allocation of that many slots (or an overflow of `offset + index`).
    @Test(arguments: StoreBackend.allCases) func aSliceBeyondTheCollectionLimitFailsAndChangesNothing(
        backend: StoreBackend
    ) throws {
        let store = try backend.store()
        var options = IngestOptions()
        options.maxCollectionLength = 10
        try store.ingest(
            bytes(#"{"offset":8,"total":10,"data":[{"uuid":"x-8"},{"uuid":"x-9"}]}"#), endpoint: "/x", options: options)
        #expect(store.collection(displayIdentifier: "/x")?.items == Array(repeating: nil, count: 8) + ["x-8", "x-9"])
        let ids = store.allIDs()
        let collections = store.collections

        let error = #expect(throws: IngestError.self) {
            try store.ingest(
                bytes(#"{"offset":9,"data":[{"uuid":"x-10"},{"uuid":"x-11"}]}"#), endpoint: "/x", options: options)
        }
        #expect(error?.code == .limit)
        #expect(error?.path == "$")
        #expect(error?.location?.offset == 53)  // where the slice ends: only then is it a slice
        #expect(
            error?.message
                == "a page of 2 items at offset 9 goes past the 10 positions an endpoint's collection may have")
        #expect(store.allIDs() == ids)
        #expect(store.collections == collections)

        // The default limit; offsets that would overflow `offset + index`; a slice inside an
        // envelope names its path.
        for offset in ["86666666666", "9223372036854775807", "1048575"] {
            let error = #expect(throws: IngestError.self) {
                try store.ingest(
                    bytes(#"{"page":{"offset":\#(offset),"data":[{"uuid":"x-1"},{"uuid":"x-2"}]}}"#), endpoint: "/y")
            }
            #expect(error?.code == .limit, "offset \(offset)")
            #expect(error?.path == "$.page", "offset \(offset)")
        }
        #expect(store.collection(displayIdentifier: "/y") == nil)
        #expect(store.allIDs() == ids)
        // An object with such an offset but no `data` array is not a slice: nothing to place.
        try store.ingest(bytes(#"{"offset":9223372036854775807,"items":[{"uuid":"x-1"}]}"#), endpoint: "/z")
        #expect(store.contains("x-1"))
    }

    @Test(arguments: StoreBackend.allCases) func aNonSliceResponseReplacesTheEndpointCollection(backend: StoreBackend)
        throws
    {
        let store = try backend.store()
        try store.ingest(bytes(Self.page(offset: 10, count: 2, total: 47).text), endpoint: "/u?offset=10")
        #expect(store.collection(displayIdentifier: "/u")?.items.count == 12)
        let result = try store.ingest(bytes(#"[{"uuid":"x-1"},{"uuid":"x-2","k":{"uuid":"x-3"}}]"#), endpoint: "/u")
        let collection = try #require(store.collection(displayIdentifier: "/u"))
        #expect(collection.items == ["x-1", "x-2"])
        #expect(collection.total == 2)
        #expect(result.endpointCollection == collection)
        #expect(store.collections(kind: .endpoint).count == 1)
    }

    @Test(arguments: StoreBackend.allCases) func nestedSlicesAreNotTheResponsesSlice(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(
            bytes(#"{"uuid":"x-1","page":{"offset":5,"total":9,"data":[{"uuid":"x-2"}]}}"#), endpoint: "/n")
        let collection = try #require(store.collection(displayIdentifier: "/n"))
        #expect(collection.items == ["x-1"])
        #expect(collection.total == 1)
    }

    @Test(arguments: StoreBackend.allCases) func anEnvelopedSliceIsFound(backend: StoreBackend) throws {
        let store = try backend.store()
        try store.ingest(
            bytes(#"{"meta":{"v":1},"result":{"data":[{"uuid":"x-2"},{"uuid":"x-3"}],"offset":3,"total":9}}"#),
            endpoint: "/env")
        let collection = try #require(store.collection(displayIdentifier: "/env"))
        #expect(collection.items == [nil, nil, nil, "x-2", "x-3"])
        #expect(collection.total == 9)
    }
}
