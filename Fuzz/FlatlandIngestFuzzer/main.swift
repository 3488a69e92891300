// libFuzzer harness for the ingestor and the store. Built by scripts/fuzz.sh against the
// FlatlandJSON and Flatland modules, compiled with the same instrumentation.
//
// Input layout: byte 0 selects the ingest options, bytes 1 and 2 the chunking (the top three
// bits of byte 1 also pick the envelope and the request's endpoint, see fuzzEnvelope), the rest
// is the response body. Each body is ingested whole and in chunks, into an empty store and into one
// that already holds records. The harness traps when chunking changes the verdict, the error or
// the store; when a failed ingest leaves any trace in the store; or when applying a response a
// second time changes anything. With option bit 7, ids come from a RuleResolver, and the body is
// also ingested with the ingestor's fast way for rules turned off: the harness traps when the
// two verdicts or stores differ.

@_spi(Testing) import Flatland
import FlatlandJSON
import Foundation

struct FuzzUser: Entity {
    static let prefix = "u"
    var id: EntityID<FuzzUser>
    var name = ""
    var age = 0
    var small: Int8 = 0
    var score = 0.0
    var ok = false
    var created: Date?
    var avatar: URL?
    var friends: [EntityID<FuzzUser>] = []
    var device: EntityID<FuzzDevice>?
    var tags: [String] = []
    var extra: JSONValue?

    init(id: EntityID<FuzzUser>) { self.id = id }

    static let fields: [Field<FuzzUser>] = [
        Field("name", \.name), Field("age", \.age), Field("small", \.small), Field("score", \.score),
        Field("ok", \.ok), Field("created", \.created), Field("avatar", \.avatar), Field("friends", \.friends),
        Field("device", \.device), Field("tags", \.tags), Field("extra", \.extra),
    ]
    static let indexes: [EntityIndex<FuzzUser>] = [EntityIndex("name", \.name)]
}

struct FuzzDevice: Entity {
    static let prefix = "d"
    static let dataVersionKey: String? = "rev"
    var id: EntityID<FuzzDevice>
    var name: String?
    var owner: EntityID<FuzzUser>?
    var seen: Date?

    init(id: EntityID<FuzzDevice>) { self.id = id }

    static let fields: [Field<FuzzDevice>] = [
        Field("name", \.name), Field("owner", \.owner), Field("seen", \.seen),
    ]
}

let fuzzRegistry = try! EntityRegistry([FuzzUser.self, FuzzDevice.self])

/// Rules that reach both of the ingestor's ways: rules without a type key that an object's
/// position lets through first (decided at the id), a rule with one, an unregistered prefix.
let fuzzRules = RuleResolver([
    .init(prefix: "u", idKey: "id", parentKeys: ["user", "owner", "friends"]),
    .init(prefix: "d", idKey: "serial", nested: true),
    .init(prefix: "u", idKey: "uuid", endpointPrefix: "/fuzz"),
    .init(prefix: "x", idKey: "id", typeKey: "kind", typeSuffix: "Thing"),
    .init(prefix: "zz", idKey: "id", parentKeys: ["other"]),
])

func fuzzIngestOptions(_ selector: UInt8) -> IngestOptions {
    var options = IngestOptions()
    switch selector & 3 {
    case 0: options.unknownPrefix = .untyped
    case 1: options.unknownPrefix = .ignore
    default: options.unknownPrefix = .fail
    }
    if selector & 4 != 0 { options.badEntity = .skipAndReport }
    if selector & 8 != 0 { options.versionKey = "version" }
    // A small budget, so that undecided objects are often read as containers instead.
    if selector & 16 != 0 { options.maxPendingObjectBytes = 48 }
    if selector & 32 != 0 { options.parser.replaceInvalidUTF8 = true }
    if selector & 64 != 0 { options.parser.limits.maxDepth = 6 }
    if selector & 128 != 0 { options.resolver = fuzzRules }
    return options
}

/// An envelope and the request's endpoint, picked by the top three bits of `selector`: every
/// declared shape, page-number paging, and a caller's page context (a `Link` header's next link,
/// a start after a previous page). Malformed paging members in the body (and the mutations that
/// make them) must fail the ingest with the store unchanged.
func fuzzEnvelope(_ selector: UInt8, into options: inout IngestOptions) -> String {
    switch selector >> 5 {
    case 1:
        options.envelope = .results
        return "/fuzz?$skip=2&$top=3"
    case 2:
        options.envelope = .datasync
        return "/fuzz"
    case 3:
        options.envelope = .odata
        options.page = IngestOptions.PageContext(start: 3)
        return "/fuzz"
    case 4:
        options.envelope = .bareArray
        options.page = IngestOptions.PageContext(total: 4, nextLink: "/fuzz?offset=9")
        return "/fuzz?offset=6&count=3"
    case 5:
        options.envelope = .cursor(items: "data", next: "next")
        return "/fuzz?fields=name"
    case 6:
        options.envelope = Envelope(items: "items", total: "total", firstPage: 0)
        return "/fuzz?page=1&per_page=3"
    case 7:
        options.page = IngestOptions.PageContext(start: 2, total: 1)
        return "/fuzz?fields=name"
    default:
        return "/fuzz?offset=0&count=5"
    }
}

/// Everything a store holds, in a canonical form: records (JSON and data version) by id, and
/// collections (whose ids are random) by their display identifier.
func fuzzDump(_ store: Store) -> [String] {
    var lines = store.allIDs().map { id -> String in
        guard let record = store.record(id: id) else { fatalError("listed id \(id) has no record") }
        var writer = JSONWriter()
        writer.beginObject()
        record.writeFields(to: &writer)
        writer.endObject()
        let fields = String(decoding: writer.bytes, as: UTF8.self)
        return "\(id) \(String(describing: record.dataVersion)) \(record.presentFields) \(fields)"
    }
    lines.append("counts \(store.countsByPrefix.sorted { $0.key < $1.key })")
    // The secondary index agrees with the records.
    let byName = Dictionary(grouping: store.all(FuzzUser.self), by: \.name)
    for (name, users) in byName {
        let found = try! store.entities(where: \FuzzUser.name, equals: name).map(\.id.rawValue)
        if found != users.map(\.id.rawValue).sorted() {
            fatalError("index on name \(name): \(found), records \(users.map(\.id.rawValue))")
        }
    }
    for prefix in store.countsByPrefix.keys where store.ids(prefix: prefix).count != store.count(prefix: prefix) {
        fatalError("prefix \(prefix): \(store.ids(prefix: prefix).count) ids, count \(store.count(prefix: prefix))")
    }
    // A write without a task id (an upsert) makes a task collection with a random display id.
    let fixed: Set<String> = ["t-fuzz", "t-seed"]
    lines += store.collections.map { c in
        let name = c.kind == .task && !fixed.contains(c.displayIdentifier) ? "t-?" : c.displayIdentifier
        return "\(c.kind) \(name) \(c.items) \(String(describing: c.total))"
    }
    .sorted()
    return lines
}

/// A store holding a few records that responses may update, and a collection.
func fuzzPopulatedStore() -> Store {
    let store = Store(registry: fuzzRegistry)
    var user = FuzzUser(id: EntityID("u-1"))
    user.name = "one"
    user.friends = [EntityID("u-2")]
    _ = try! store.upsert(user)
    _ = try! store.ingest(
        Array(#"[{"uuid":"d-1","rev":3,"name":"phone","owner":"u-1"},{"uuid":"x-1","any":[1,{"k":null}]}]"#.utf8),
        endpoint: "/seed", taskID: "t-seed")
    return store
}

struct FuzzIngestOutcome {
    var error: String?
    var changes: ChangeSet?
    var dump: [String]
}

func fuzzIngest(
    _ text: UnsafeRawBufferPointer, into store: Store, options: IngestOptions, endpoint: String, chunks: [Int]?
) -> FuzzIngestOutcome {
    let ingestor = store.makeIngestor(endpoint: endpoint, taskID: "t-fuzz", options: options)
    do throws(IngestError) {
        try fuzzFeed(text, chunks: chunks) { (bytes) throws(IngestError) in try ingestor.feed(bytes) }
        let result = try store.commit(ingestor.finish())
        if let page = result.page, let collection = result.endpointCollection {
            // A page's items sit at their positions, and nothing lies at or past its total.
            if let total = page.total, collection.items.count > total {
                fatalError("the collection has \(collection.items.count) positions past the total \(total)")
            }
            if page.nextOffset > options.maxCollectionLength { fatalError("a page past the collection's limit") }
        }
        return FuzzIngestOutcome(error: nil, changes: result.changes, dump: fuzzDump(store))
    } catch {
        // Sticky: the ingestor refuses anything after an error.
        do throws(IngestError) {
            _ = try ingestor.finish()
            fatalError("finish after an error did not throw")
        } catch {}
        return FuzzIngestOutcome(error: "\(error.code) \(error)", changes: nil, dump: fuzzDump(store))
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    var options = fuzzIngestOptions(data[0])
    let endpoint = fuzzEnvelope(data[1], into: &options)
    let text = UnsafeRawBufferPointer(start: data + 3, count: size - 3)
    let chunks = fuzzChunkSizes(total: text.count, seed: data[1], maxSize: data[2])
    let populatedBefore = fuzzDump(fuzzPopulatedStore())

    if data[0] & 128 != 0, data[0] & 16 == 0 {
        // The fast way decides at the id; the general one, waiting for every identity key, at
        // the object's end. Where an object outgrows a small pending budget in between, the
        // general way reads it as a container (and may then not meet a bad field the fast way
        // decodes), so the small budget is left out of this comparison.
        var general = options
        general.allowsRuleFastPath = false
        let fast = fuzzIngest(
            text, into: Store(registry: fuzzRegistry), options: options, endpoint: endpoint, chunks: nil)
        let slow = fuzzIngest(
            text, into: Store(registry: fuzzRegistry), options: general, endpoint: endpoint, chunks: chunks)
        if (fast.error == nil) != (slow.error == nil) {
            fatalError(
                "the rule resolver's two ways disagree: \(String(describing: fast.error)) vs \(String(describing: slow.error))"
            )
        }
        if fast.dump != slow.dump {
            fatalError("the rule resolver's two ways stored different things:\n\(fast.dump)\n\(slow.dump)")
        }
    }

    for populated in [false, true] {
        func fresh() -> Store { populated ? fuzzPopulatedStore() : Store(registry: fuzzRegistry) }
        let store = fresh()
        let whole = fuzzIngest(text, into: store, options: options, endpoint: endpoint, chunks: nil)
        let chunked = fuzzIngest(text, into: fresh(), options: options, endpoint: endpoint, chunks: chunks)
        if whole.error != chunked.error {
            fatalError(
                "chunking \(chunks) changed the verdict: \(String(describing: whole.error)) vs \(String(describing: chunked.error))"
            )
        }
        if whole.dump != chunked.dump {
            fatalError("chunking \(chunks) changed the store:\n\(whole.dump)\n\(chunked.dump)")
        }
        if whole.error != nil {
            // Nothing of a failed response is applied.
            let before = populated ? populatedBefore : fuzzDump(Store(registry: fuzzRegistry))
            if whole.dump != before { fatalError("a failed ingest changed the store: \(whole.dump)") }
            continue
        }
        // The same response again changes no record. (Not where data versions are compared: an
        // object without a version is always applied, while one with a version is skipped once
        // the store has that version, so a response that mixes both for one entity may apply
        // its unversioned object the second time and not the first.)
        let again = fuzzIngest(text, into: store, options: options, endpoint: endpoint, chunks: nil)
        if let error = again.error { fatalError("the second ingest failed: \(error)") }
        guard options.versionKey == nil else { continue }
        let unversioned = { (id: String) in !id.hasPrefix("d-") }
        if let changes = again.changes,
            changes.inserted.contains(where: unversioned) || changes.updated.contains(where: { unversioned($0.id) })
        {
            fatalError("the second ingest changed records: \(changes)")
        }
        let kept = { (line: String) in !line.hasPrefix("task ") && !line.hasPrefix("d-") }
        if again.dump.filter(kept) != whole.dump.filter(kept) {
            fatalError("the second ingest changed the store:\n\(whole.dump)\n\(again.dump)")
        }
    }
    return 0
}
