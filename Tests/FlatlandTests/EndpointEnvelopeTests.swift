import Flatland
import Testing

/// Envelopes declared per endpoint, once, in the options a session or backend uses.
@Suite struct EndpointEnvelopeTests {
    private var options: IngestOptions {
        var options = IngestOptions()
        options.endpointEnvelopes = [
            .init("/tables", .datasync),
            .init("/tables/legacy/", .results),
            .init("/search", .cursor(items: "hits", next: "after")),
        ]
        return options
    }

    @Test func eachEndpointIsReadWithItsOwnEnvelope() throws {
        let store = Store()
        let datasync = try store.ingest(
            Array(#"{"items":[{"uuid":"u-1"},{"uuid":"u-2"}],"count":7,"nextLink":"/tables/todoitem?$skip=2"}"#.utf8),
            endpoint: "/tables/todoitem?$count=true", options: options)
        #expect(datasync.page?.nextLink == "/tables/todoitem?$skip=2")
        #expect(store.collection(endpoint: "/tables/todoitem?$count=true")?.total == 7)

        let legacy = try store.ingest(
            Array(#"{"results":[{"uuid":"u-3"}],"count":1}"#.utf8), endpoint: "/tables/legacy/item?$skip=0",
            options: options)
        #expect(legacy.endpointCollection?.items == ["u-3"])
        #expect(legacy.endpointCollection?.total == 1)

        let search = try store.ingest(
            Array(#"{"hits":[{"uuid":"u-4"}],"after":"c2"}"#.utf8), endpoint: "/search?q=x", options: options)
        #expect(search.page?.nextLink == "c2")

        // Not declared: the default shape.
        let users = try store.ingest(
            Array(#"{"offset":3,"count":1,"total":9,"data":[{"uuid":"u-5"}]}"#.utf8), endpoint: "/users?offset=3",
            options: options)
        #expect(users.endpointCollection?.items == [nil, nil, nil, "u-5"])
    }

    @Test(arguments: [
        ("/tables", "datasync"), ("/tables/todoitem", "datasync"), ("/tables?x=1", "datasync"),
        ("/tables/legacy", "results"), ("/tables/legacy/a/b", "results"), ("/tablesx", "default"),
        ("/search#top", "cursor"), ("/other", "default"), ("", "default"),
    ])
    func theLongestPrefixCoveringThePathWins(endpoint: String, expected: String) {
        let found = options.envelope(forEndpoint: endpoint)
        let named: [(String, Envelope)] = [
            ("datasync", .datasync), ("results", .results), ("cursor", .cursor(items: "hits", next: "after")),
            ("default", .default),
        ]
        #expect(named.first { $0.1 == found }?.0 == expected)
    }
}
