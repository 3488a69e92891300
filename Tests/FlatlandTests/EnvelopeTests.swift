import Flatland
import FlatlandJSON
import Testing

/// Every declared envelope shape, through ``Store/ingest(_:endpoint:taskID:options:)`` whole and
/// through an ingestor fed one byte at a time.
@Suite("Envelopes")
struct EnvelopeTests {
    /// Whole (`Int.max`, through `Store.ingest`) and one byte at a time.
    static let chunkings = StoreBackend.each([Int.max, 1])

    @discardableResult
    static func ingest(
        _ store: Store, _ text: String, endpoint: String, options: IngestOptions, chunk: Int
    ) throws -> IngestResult {
        if chunk == .max { return try store.ingest(bytes(text), endpoint: endpoint, options: options) }
        return try ingestChunked(store, bytes(text), chunkSize: chunk, endpoint: endpoint, options: options)
    }

    static func items(_ ids: ClosedRange<Int>) -> String {
        ids.map { #"{"uuid":"x-\#($0)"}"# }.joined(separator: ",")
    }

    static func ids(_ ids: ClosedRange<Int>) -> [String?] { ids.map { "x-\($0)" } }

    /// Azure Mobile Apps v2 with `$inlinecount=allpages`: `count` is the endpoint's total, the
    /// position is the request's `$skip`.
    @Test(arguments: chunkings) func azureResults(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        let options = IngestOptions(envelope: .results)
        let first = try Self.ingest(
            store, #"{"results":[\#(Self.items(1...2))],"count":5}"#,
            endpoint: "/tables/todo?$inlinecount=allpages&$top=2&$skip=0", options: options, chunk: chunk)
        #expect(first.page == IngestResult.Page(offset: 0, count: 2, total: 5, nextLink: nil))
        let second = try Self.ingest(
            store, #"{"count":5,"results":[\#(Self.items(3...4))]}"#,
            endpoint: "/tables/todo?$skip=2&$inlinecount=allpages&$top=2", options: options, chunk: chunk)
        #expect(second.page?.offset == 2)
        let collection = try #require(store.collection(endpoint: "/tables/todo?$inlinecount=allpages&$skip=4"))
        #expect(collection.items == Self.ids(1...4))
        #expect(collection.total == 5)
        #expect(second.endpointCollection == collection)
        // A page without `count` is still a page of a declared envelope (no paging member needed).
        try Self.ingest(
            store, #"{"results":[\#(Self.items(5...5))]}"#,
            endpoint: "/tables/todo?$inlinecount=allpages&$skip=4", options: options, chunk: chunk)
        #expect(store.collection(endpoint: "/tables/todo?$inlinecount=allpages")?.items == Self.ids(1...5))
    }

    /// Azure Datasync v3: `items`, `count` as the total, `nextLink` reported for the pager.
    @Test(arguments: chunkings) func datasyncNextLink(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        let options = IngestOptions(envelope: .datasync)
        let next = "https://h.example/tables/todo?$count=true&$skip=2"
        let first = try Self.ingest(
            store, #"{"items":[\#(Self.items(1...2))],"count":3,"nextLink":"\#(next)"}"#,
            endpoint: "/tables/todo?$count=true", options: options, chunk: chunk)
        #expect(first.page == IngestResult.Page(offset: 0, count: 2, total: 3, nextLink: next))
        let last = try Self.ingest(
            store, #"{"items":[\#(Self.items(3...3))],"count":3,"nextLink":null}"#,
            endpoint: "/tables/todo?$count=true&$skip=2", options: options, chunk: chunk)
        #expect(last.page == IngestResult.Page(offset: 2, count: 1, total: 3, nextLink: nil))
        #expect(store.collection(endpoint: "/tables/todo?$count=true")?.items == Self.ids(1...3))
    }

    /// OData: the next link carries no position (a skip token), so the pager passes where the
    /// previous page ended: a page without an offset comes right after it.
    @Test(arguments: chunkings) func odataFollowingNextLinks(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        var options = IngestOptions(envelope: .odata)
        let first = try Self.ingest(
            store,
            #"{"@odata.context":"x","@odata.count":5,"value":[\#(Self.items(1...3))],"@odata.nextLink":"/People?$skiptoken=a"}"#,
            endpoint: "/People", options: options, chunk: chunk)
        let link = try #require(first.page?.nextLink)
        #expect(link == "/People?$skiptoken=a")
        options.page = IngestOptions.PageContext(start: first.page?.nextOffset)
        let second = try Self.ingest(
            store, #"{"value":[\#(Self.items(4...5))]}"#, endpoint: link, options: options, chunk: chunk)
        #expect(second.page == IngestResult.Page(offset: 3, count: 2, total: nil, nextLink: nil))
        let collection = try #require(store.collection(endpoint: "/People?$skiptoken=a"))
        #expect(collection.displayIdentifier == "/People")
        #expect(collection.items == Self.ids(1...5))
        #expect(collection.total == 5)
    }

    /// A bare array whose next page is in a `Link` header the HTTP layer read: the caller gives
    /// the link, the position comes from the request's `page` and `per_page`.
    @Test(arguments: chunkings) func bareArrayWithLinkHeader(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        let link = "https://api.example/repos/o/r/issues?page=3&per_page=2"
        let options = IngestOptions(
            envelope: .bareArray, page: IngestOptions.PageContext(total: 9, nextLink: link))
        let result = try Self.ingest(
            store, "[\(Self.items(3...4))]", endpoint: "/repos/o/r/issues?per_page=2&page=2", options: options,
            chunk: chunk)
        #expect(result.page == IngestResult.Page(offset: 2, count: 2, total: 9, nextLink: link))
        #expect(store.collection(endpoint: "/repos/o/r/issues")?.items == [nil, nil, "x-3", "x-4"])
        #expect(store.collection(endpoint: "/repos/o/r/issues")?.total == 9)

        // The HTTP way: the ingestor is made before the headers arrive, which then give the link.
        let ingestor = store.makeIngestor(
            endpoint: "/repos/o/r/issues?per_page=2&page=3", options: IngestOptions(envelope: .bareArray))
        ingestor.pageContext.nextLink = "https://api.example/repos/o/r/issues?page=4&per_page=2"
        try ingestor.feed(bytes("[\(Self.items(5...6))]"))
        ingestor.pageContext.nextLink = "ignored: the body has begun"
        let third = try store.commit(ingestor.finish())
        #expect(third.page?.nextLink == "https://api.example/repos/o/r/issues?page=4&per_page=2")
        #expect(store.collection(endpoint: "/repos/o/r/issues")?.items == [nil, nil] + Self.ids(3...6))
    }

    /// `?page=&per_page=` accumulate at `(page - firstPage) * perPage + index`, with the default
    /// envelope too, and with a numbering from 0.
    @Test(arguments: chunkings) func pageNumbers(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        for page in [3, 1, 2] {
            let first = (page - 1) * 2 + 1
            try Self.ingest(
                store, "[\(Self.items(first...first + 1))]", endpoint: "/u?page=\(page)&per_page=2",
                options: IngestOptions(), chunk: chunk)
        }
        #expect(store.collection(endpoint: "/u")?.items == Self.ids(1...6))
        // An object with the items member is a page too, and numbering may start at 0.
        let zero = IngestOptions(envelope: Envelope(items: "items", total: "total", firstPage: 0))
        try Self.ingest(
            store, #"{"items":[\#(Self.items(7...8))],"total":4}"#, endpoint: "/z?page=1&per_page=2", options: zero,
            chunk: chunk)
        #expect(store.collection(endpoint: "/z")?.items == [nil, nil, "x-7", "x-8"])
        #expect(store.collection(endpoint: "/z")?.total == 4)
    }

    /// A cursor is reported like a next link; the caller places the pages.
    @Test(arguments: chunkings) func cursors(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        var options = IngestOptions(envelope: .cursor())
        let first = try Self.ingest(
            store, #"{"data":[\#(Self.items(1...2))],"next_cursor":"c2"}"#, endpoint: "/feed", options: options,
            chunk: chunk)
        #expect(first.page?.nextLink == "c2")
        options.page.start = first.page?.nextOffset
        let last = try Self.ingest(
            store, #"{"data":[\#(Self.items(3...3))],"next_cursor":null}"#, endpoint: "/feed?cursor=c2",
            options: options, chunk: chunk)
        #expect(last.page?.nextLink == nil)
        #expect(store.collection(endpoint: "/feed")?.items == Self.ids(1...3))
    }

    /// Today's shape is the default, and a plain `{"data":[…]}` without paging members is still a
    /// container.
    @Test(arguments: chunkings) func defaultShape(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        let result = try Self.ingest(
            store, #"{"offset":1,"count":2,"total":47,"data":[\#(Self.items(2...3))]}"#, endpoint: "/d?offset=1",
            options: IngestOptions(), chunk: chunk)
        #expect(result.page == IngestResult.Page(offset: 1, count: 2, total: 47, nextLink: nil))
        #expect(store.collection(endpoint: "/d")?.items == [nil, "x-2", "x-3"])
        let plain = try Self.ingest(
            store, #"{"data":[\#(Self.items(4...4))]}"#, endpoint: "/p", options: IngestOptions(), chunk: chunk)
        #expect(plain.page == nil)
        #expect(store.collection(endpoint: "/p")?.items == ["x-4"])
    }

    /// Malformed paging members: a typed error with line and column, and nothing stored. Where
    /// the items came first the error points at the value; otherwise at the end of the page.
    @Test(arguments: chunkings) func malformedPagingMembersFailTheIngest(backend: StoreBackend, chunk: Int) throws {
        let store = try backend.store()
        try Self.ingest(
            store, #"{"offset":0,"total":2,"data":[\#(Self.items(1...2))]}"#, endpoint: "/m", options: IngestOptions(),
            chunk: chunk)
        let ids = store.allIDs()
        let collections = store.collections
        let values = ["-1", "2.5", "-0.5", #""3""#, "true", "[]", "{}", "99999999999999999999"]
        for member in ["offset", "count", "total"] {
            for value in values {
                for text in [
                    #"{"\#(member)":\#(value),"data":[{"uuid":"x-9"}]}"#,
                    #"{"data":[{"uuid":"x-9"}],\#n"\#(member)":\#(value)}"#,
                ] {
                    let error = #expect(throws: IngestError.self, "\(text)") {
                        try Self.ingest(store, text, endpoint: "/m", options: IngestOptions(), chunk: chunk)
                    }
                    #expect(error?.code == .paging, "\(text)")
                    #expect(error?.location != nil, "\(text)")
                    #expect(error?.message.contains(#""\#(member)""#) == true, "\(text)")
                }
            }
        }
        // Items first: the error is at the value, on the second line.
        let error = #expect(throws: IngestError.self) {
            try Self.ingest(
                store, #"{"data":[{"uuid":"x-9"}],"# + "\n" + #" "offset":-4}"#, endpoint: "/m",
                options: IngestOptions(), chunk: chunk)
        }
        #expect(error?.location?.line == 2)
        #expect(error?.path == "$.offset")
        // The next link must be a string.
        #expect(throws: IngestError.self) {
            try Self.ingest(
                store, #"{"items":[{"uuid":"x-9"}],"nextLink":5}"#, endpoint: "/m",
                options: IngestOptions(envelope: .datasync), chunk: chunk)
        }
        // A malformed paging member of an object that is not a page is nobody's business.
        try Self.ingest(
            store, #"{"count":"many","list":[{"uuid":"x-8"}]}"#, endpoint: "/other", options: IngestOptions(),
            chunk: chunk)
        #expect(store.contains("x-8"))
        #expect(!store.contains("x-9"))
        #expect(store.collection(endpoint: "/m") == collections.first { $0.displayIdentifier == "/m" })
        #expect(store.allIDs() == (ids + ["x-8"]).sorted())
    }

    /// A malformed paging member is reported at the same place however the body is chunked.
    @Test(arguments: [
        #"{"data":[{"uuid":"x-1"}],"offset":-12}"#, #"{"offset":1.5,"data":[]}"#,
        #"{"results":[],"count":"7"}"#, #"{"items":[],"nextLink":[1]}"#,
    ])
    func pagingErrorsDoNotDependOnChunking(text: String) throws {
        let envelope: Envelope =
            text.contains("results") ? .results : text.contains("items") ? .datasync : .default
        var verdicts: [String] = []
        for chunk in [Int.max, 1, 3] {
            let store = Store()
            let error = #expect(throws: IngestError.self) {
                try Self.ingest(store, text, endpoint: "/c", options: IngestOptions(envelope: envelope), chunk: chunk)
            }
            #expect(error?.code == .paging)
            verdicts.append(error.map { "\($0)" } ?? "")
            #expect(store.count == 0)
        }
        #expect(Set(verdicts).count == 1, "\(verdicts)")
    }

    /// Paging query parameters are checked too, and a failure stores nothing.
    @Test(arguments: StoreBackend.allCases) func malformedPagingParametersFailTheIngest(backend: StoreBackend) throws {
        let store = try backend.store()
        for endpoint in ["/q?page=0&per_page=2", "/q?page=x&per_page=2", "/q?page=1&per_page=-2"] {
            let error = #expect(throws: IngestError.self, "\(endpoint)") {
                try store.ingest(bytes("[\(Self.items(1...1))]"), endpoint: endpoint)
            }
            #expect(error?.code == .paging, "\(endpoint)")
        }
        let error = #expect(throws: IngestError.self) {
            try store.ingest(
                bytes(#"{"results":[]}"#), endpoint: "/t?$skip=-3", options: IngestOptions(envelope: .results))
        }
        #expect(error?.code == .paging)
        #expect(store.count == 0)
        #expect(store.collections.isEmpty)
    }
}
