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
                    #expect(found == first ?? -1, "\(position)")
                    #expect(
                        (found >= 0)
                            == resolver.mayIdentify(parentKey: parentKey, isNested: isNested, endpoint: endpoint),
                        "\(position)")
                }
            }
        }
    }
}
