import Flatland
import Testing

@Suite("Non-fielded endpoints")
struct EndpointTests {
    static let cases: [(input: String, expected: String)] = [
        ("/users/friends/?offset=10&count=2&field=firstname,age&gender=male", "/users/friends/?gender=male"),
        ("/users?b=2&a=1", "/users?a=1&b=2"),
        ("/users?b=1&a=2&a=1", "/users?a=1&a=2&b=1"),
        ("/users?name=x&name=a&name=m", "/users?name=a&name=m&name=x"),
        ("/users?a=10&a=9", "/users?a=10&a=9"),
        ("/users?q=%7e", "/users?q=~"),
        ("/users?q=%7E", "/users?q=~"),
        ("/users?q=~", "/users?q=~"),
        ("/users?q=a%2fb", "/users?q=a/b"),
        ("/users?q=a%2Fb", "/users?q=a/b"),
        ("/users?q=a%26b", "/users?q=a%26b"),
        ("/users?q=a%3db", "/users?q=a%3Db"),
        ("/users?q=a%20b", "/users?q=a%20b"),
        ("/users?q=caf%c3%a9", "/users?q=caf%C3%A9"),
        ("/users?q=café", "/users?q=caf%C3%A9"),
        ("/users?%6Fffset=3&x=1", "/users?x=1"),
        ("/users?offset=0&count=20", "/users"),
        ("/users?", "/users"),
        ("/users", "/users"),
        ("/users?limit=5&page=2&per_page=9&cursor=abc&fields=a,b", "/users"),
        ("/odata/People?$skip=20&$top=10&$select=Name&$filter=Age%20gt%2030", "/odata/People?$filter=Age%20gt%2030"),
        ("/users?x=1#section", "/users?x=1"),
        ("/users#frag?x=1", "/users"),
        ("/users?&&a=1&&b=2&", "/users?a=1&b=2"),
        ("/users?flag&b=1", "/users?b=1&flag"),
        ("/users?=orphan&a=1", "/users?a=1"),
        ("/users?a=1&offset", "/users?a=1"),
        ("/users?q=50%", "/users?q=50%25"),
        ("/users?q=%zz", "/users?q=%25zz"),
        ("/search?q=a+b", "/search?q=a+b"),
        ("/search?q=a%2Bb", "/search?q=a%2Bb"),
        ("/search?q=a%2bb", "/search?q=a%2Bb"),
        ("/search?q=%24x&%24top=3", "/search?q=$x"),
        // The delimiters are bytes: one followed by a combining mark (which would join it in
        // one Character) still delimits.
        ("/users?b=2&\u{301}a=1", "/users?%CC%81a=1&b=2"),
        ("/users?b\u{301}=2&a=1", "/users?a=1&b%CC%81=2"),
        ("/users?a=1#\u{301}x", "/users?a=1"),
        ("/users/\u{301}?\u{301}=x", "/users/\u{301}?%CC%81=x"),
    ]

    @Test(arguments: cases)
    func nonFielded(input: String, expected: String) {
        #expect(Endpoint.nonFielded(input) == expected)
    }

    @Test(arguments: cases)
    func nonFieldedIsIdempotent(input: String, expected: String) {
        #expect(Endpoint.nonFielded(Endpoint.nonFielded(input)) == Endpoint.nonFielded(input))
    }

    @Test(arguments: [
        ("/users?offset=1&page=2&count=3", "/users?count=3&offset=1"),
        ("/users?page=2", "/users"),
        ("/users?sort=name&page=1", "/users?sort=name"),
    ])
    func customIgnoredParameters(input: String, expected: String) {
        #expect(Endpoint.nonFielded(input, ignoring: ["page"]) == expected)
    }

    /// In a form-encoded query `+` is a space and `%2B` a plus sign: different requests.
    @Test func anEncodedPlusIsNotALiteralPlus() {
        #expect(Endpoint.nonFielded("/search?q=a%2Bb") != Endpoint.nonFielded("/search?q=a+b"))
    }

    @Test(arguments: StoreBackend.allCases) func ingestUsesTheOptionsIgnoredList(backend: StoreBackend) throws {
        let store = try backend.store()
        var options = IngestOptions()
        options.ignoredParameters = ["p"]
        let result = try store.ingest(bytes(#"[{"uuid":"x-1"}]"#), endpoint: "/a?p=1&z=2&offset=3", options: options)
        #expect(result.endpointCollection?.displayIdentifier == "/a?offset=3&z=2")
    }

    @Test(arguments: StoreBackend.allCases) func sameEndpointWrittenDifferentlyIsOneCollection(backend: StoreBackend)
        throws
    {
        let store = try backend.store()
        try store.ingest(bytes(#"{"offset":0,"data":[{"uuid":"x-1"}]}"#), endpoint: "/a?b=%7e&a=1&offset=0")
        try store.ingest(bytes(#"{"offset":1,"data":[{"uuid":"x-2"}]}"#), endpoint: "/a?a=1&b=~&offset=1#top")
        #expect(store.collections(kind: .endpoint).map(\.displayIdentifier) == ["/a?a=1&b=~"])
        #expect(store.collection(displayIdentifier: "/a?a=1&b=~")?.items == ["x-1", "x-2"])
    }
}
