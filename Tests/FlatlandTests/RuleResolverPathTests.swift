@_spi(Testing) import Flatland
import FlatlandJSON
import Testing

/// The ingestor has a fast way with a ``RuleResolver``: the first rule an object's position
/// allows is known when the object opens, so a rule without a type key decides as soon as its
/// id arrives. The general way asks the rules when the object's identity keys are all in (or
/// it ends). The two must store the same.
@Suite("Rule resolver: the fast way and the general way agree")
struct RuleResolverPathTests {
    static let ruleSets: [(name: String, rules: [RuleResolver.Rule])] = [
        (
            "GitHub",
            [
                .init(prefix: "ev", idKey: "id", typeKey: "type", typeSuffix: "Event"),
                .init(prefix: "gu", idKey: "id", parentKeys: ["actor"]),
                .init(prefix: "gr", idKey: "id", parentKeys: ["repo"]),
                .init(prefix: "go", idKey: "id", parentKeys: ["org"]),
            ]
        ),
        (
            "by position only",
            [
                .init(prefix: "gu", idKey: "id", parentKeys: ["actor", "owner"]),
                .init(prefix: "gr", idKey: "id", parentKeys: ["repo"], nested: true),
                .init(prefix: "go", idKey: "login", parentKeys: ["org"]),
                .init(prefix: "zz", idKey: "id", parentKeys: ["thing"]),
                .init(prefix: "ev", idKey: "id", endpointPrefix: "/events"),
            ]
        ),
        (
            "first rule's id missing",
            [
                .init(prefix: "gu", idKey: "uid", parentKeys: ["actor"]),
                .init(prefix: "gu", idKey: "id", parentKeys: ["actor", "owner"]),
                .init(prefix: "gr", idKey: "id", parentKeys: ["repo"]),
                .init(prefix: "go", idKey: "login", parentKeys: ["org"]),
                .init(prefix: "zz", idKey: "id", parentKeys: ["thing"]),
                .init(prefix: "ev", idKey: "id"),
            ]
        ),
    ]

    /// Under each rule set, some are stored whole and some fail (a rule gives an object a type
    /// whose fields it does not fit); the last has fields of the wrong type under every set.
    static let documents: [String] = [
        // Actors met again (merged into one draft), ids as numbers and strings, the id before
        // and after the other members, an org named by login, an unregistered prefix.
        #"""
        [{"id":"1","type":"PushEvent","actor":{"id":7,"login":"a"},"repo":{"id":70,"name":"r"},
          "org":{"login":"gh","id":5}},
         {"actor":{"login":"a2","id":7},"type":"WatchEvent","id":"2","repo":{"name":"r2","id":70},
          "thing":{"id":3,"x":1}},
         {"id":"3","actor":{"uid":"u9","id":8,"login":"b"},"owner":{"id":7,"login":"a3"}}]
        """#,
        // Ids that are not strings or numbers, an actor with no id, nested repos.
        #"""
        {"data":[{"id":"4","actor":{"id":null,"login":"n"},"repo":{"id":true}},
                 {"id":"5","actor":{"login":"c","avatar_url":"https://x/y"},
                  "payload":{"repo":{"id":71,"name":"deep"},"actor":{"id":9,"login":"d"}}}],
         "offset":0,"total":2}
        """#,
        // The same entity three times in one response, each with other fields.
        #"""
        [{"id":"6","actor":{"id":10,"login":"e"}},{"id":"7","actor":{"login":"e2","id":10}},
         {"actor":{"id":10,"avatar_url":"https://e/e"},"id":"8"}]
        """#,
        // An identity key given twice: its first value names the object, under either way.
        #"""
        [{"id":"11","actor":{"id":12,"login":"h","id":13}},
         {"id":"12","id":"13","type":"WatchEvent","actor":{"login":"i","id":14,"id":15},"repo":{"id":72,"id":73}}]
        """#,
        // Fields of the wrong type.
        #"""
        [{"id":"9","actor":{"id":11,"login":"f"}},{"type":"PushEvent","id":10,"actor":{"id":"x","login":"g"}}]
        """#,
    ]

    struct Outcome: Equatable {
        var records: [String: [UInt8]] = [:]
        var task: [String?] = []
        var endpoint: [String?]?
        var skipped: [String] = []
        var error: IngestError?

        static func == (a: Outcome, b: Outcome) -> Bool {
            a.records == b.records && a.task == b.task && a.endpoint == b.endpoint
                && a.skipped.sorted() == b.skipped.sorted()
                && a.error?.description == b.error?.description
        }
    }

    static func ingest(
        _ text: String, rules: RuleResolver, fast: Bool, unknown: IngestOptions.UnknownPrefixPolicy,
        badEntity: IngestOptions.BadEntityPolicy
    ) throws -> Outcome {
        let store = Store(registry: try EntityRegistry([GHEvent.self, GHUser.self, GHRepo.self, GHOrg.self]))
        var options = IngestOptions(resolver: rules)
        options.allowsRuleFastPath = fast
        options.unknownPrefix = unknown
        options.badEntity = badEntity
        var outcome = Outcome()
        do {
            let result = try store.ingest(Array(text.utf8), endpoint: "/events", options: options)
            outcome.task = result.taskCollection.items
            outcome.endpoint = result.endpointCollection?.items
            outcome.skipped = result.skipped.map(\.description)
        } catch {
            outcome.error = error
        }
        for id in store.allIDs() {
            guard let record = store.record(id: id) else { continue }
            var writer = JSONWriter()
            record.writeFields(to: &writer)
            outcome.records[id] = writer.bytes + Array(record.presentFields.joined(separator: ",").utf8)
        }
        return outcome
    }

    @Test func anIdentityKeyGivenTwiceIsNamedByItsFirstValue() throws {
        let rules = RuleResolver(Self.ruleSets[0].rules)
        for fast in [true, false] {
            let outcome = try Self.ingest(
                Self.documents[3], rules: rules, fast: fast, unknown: .untyped, badEntity: .failResponse)
            #expect(outcome.error == nil)
            // (The first event has no type, so under these rules it is not an entity.)
            #expect(outcome.records.keys.sorted() == ["ev-12", "gr-72", "gu-12", "gu-14"], "fast: \(fast)")
        }
    }

    /// Deciding at the id can find a bad field sooner than deciding at the object's end: then
    /// both ways fail with the same kind of error, the fast one at an earlier place or the same,
    /// and entities skipped for bad fields are reported in another order, but the same ones.
    @Test(arguments: 0..<ruleSets.count, [IngestOptions.UnknownPrefixPolicy.untyped, .ignore, .fail])
    func bothWaysStoreTheSame(ruleSet: Int, unknown: IngestOptions.UnknownPrefixPolicy) throws {
        let rules = RuleResolver(Self.ruleSets[ruleSet].rules)
        for badEntity in [IngestOptions.BadEntityPolicy.failResponse, .skipAndReport] {
            for (d, document) in Self.documents.enumerated() {
                let fast = try Self.ingest(document, rules: rules, fast: true, unknown: unknown, badEntity: badEntity)
                let general = try Self.ingest(
                    document, rules: rules, fast: false, unknown: unknown, badEntity: badEntity)
                let label = "\(Self.ruleSets[ruleSet].name), document \(d), \(badEntity)"
                if let error = fast.error, let other = general.error {
                    #expect(error.code == other.code, "\(label)")
                    #expect(fast.records.isEmpty && general.records.isEmpty, "\(label)")
                    #expect((error.location?.offset ?? 0) <= (other.location?.offset ?? 0), "\(label)")
                } else {
                    #expect(fast == general, "\(label)")
                    #expect(!fast.records.isEmpty, "\(label)")
                }
            }
        }
    }
}
