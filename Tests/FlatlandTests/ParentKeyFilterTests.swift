import Testing

@testable import Flatland

@Suite("The ingest's parent key filter")
struct ParentKeyFilterTests {
    static let ruleSets: [[RuleResolver.Rule]] = [
        [],
        [.init(prefix: "a", idKey: "id")],
        [.init(prefix: "a", idKey: "id", parentKeys: ["user", "owner"])],
        [
            .init(prefix: "a", idKey: "id", parentKeys: ["user"], nested: true),
            .init(prefix: "b", idKey: "id", parentKeys: ["repo", ""], nested: false),
        ],
        [
            .init(prefix: "a", idKey: "id", parentKeys: ["user"], endpointPrefix: "/users"),
            .init(prefix: "b", idKey: "id", endpointPrefix: "/repos", nested: true),
            .init(prefix: "c", idKey: "id", parentKeys: ["org", "repo"]),
        ],
    ]

    /// The filter is worked out once per ingest; it must name the rule the resolver's own
    /// conditions let through first, for every parent key, nesting and endpoint, and so answer
    /// `mayIdentify` as the resolver does.
    @Test(arguments: ruleSets)
    func answersAsTheRulesDo(rules: [RuleResolver.Rule]) {
        let resolver = RuleResolver(rules)
        for endpoint in [nil, "/users/12", "/repos", "/other"] as [String?] {
            let filter = ParentKeyFilter(resolver, endpoint: endpoint)
            for parentKey in [nil, "", "user", "owner", "repo", "org", "users", "x"] as [String?] {
                for isNested in [false, true] {
                    let first = rules.firstIndex {
                        $0.allows(parentKey: parentKey, isNested: isNested, endpoint: endpoint)
                    }
                    let found = filter.firstRule(parentKey: parentKey, isNested: isNested)
                    let position = "endpoint \(endpoint ?? "nil"), parent key \(parentKey ?? "nil"), nested \(isNested)"
                    #expect(found.map(Int.init) == first, "\(position)")
                    #expect(
                        (found != nil)
                            == resolver.mayIdentify(parentKey: parentKey, isNested: isNested, endpoint: endpoint),
                        "\(position)")
                }
            }
        }
    }

    /// The rules' conditions themselves, written out: nesting, endpoint and parent keys.
    @Test func namesTheFirstRuleItsPositionAllows() {
        let resolver = RuleResolver([
            .init(prefix: "a", idKey: "id", parentKeys: ["user"], nested: true),
            .init(prefix: "b", idKey: "id", parentKeys: ["repo"], nested: false),
            .init(prefix: "c", idKey: "id", endpointPrefix: "/users"),
            .init(prefix: "d", idKey: "id", parentKeys: ["org"]),
        ])
        let cases: [(endpoint: String?, parentKey: String?, isNested: Bool, rule: Int?)] = [
            ("/users/1", "user", true, 0),
            ("/users/1", "user", false, 2),
            ("/users", nil, false, 2),
            ("/repos", "user", false, nil),
            ("/repos", "repo", false, 1),
            ("/repos", "repo", true, nil),
            ("/repos", "org", true, 3),
            (nil, nil, false, nil),
        ]
        for c in cases {
            let filter = ParentKeyFilter(resolver, endpoint: c.endpoint)
            #expect(
                filter.firstRule(parentKey: c.parentKey, isNested: c.isNested).map(Int.init) == c.rule,
                "endpoint \(c.endpoint ?? "nil"), parent key \(c.parentKey ?? "nil"), nested \(c.isNested)")
        }
    }
}
