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

    /// The filter is worked out once per ingest; it must answer as the rules do, for every
    /// parent key, nesting and endpoint.
    @Test(arguments: ruleSets)
    func answersAsTheRulesDo(rules: [RuleResolver.Rule]) {
        let resolver = RuleResolver(rules)
        for endpoint in [nil, "/users/12", "/repos", "/other"] as [String?] {
            let filter = ParentKeyFilter(resolver, endpoint: endpoint)
            for parentKey in [nil, "", "user", "owner", "repo", "org", "users", "x"] as [String?] {
                for isNested in [false, true] {
                    #expect(
                        filter.mayIdentify(parentKey: parentKey, isNested: isNested)
                            == resolver.mayIdentify(parentKey: parentKey, isNested: isNested, endpoint: endpoint),
                        "endpoint \(endpoint ?? "nil"), parent key \(parentKey ?? "nil"), nested \(isNested)")
                }
            }
        }
    }
}
