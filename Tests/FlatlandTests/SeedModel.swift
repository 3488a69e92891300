import Flatland
import FlatlandJSON
import Foundation

/// The seed's own domain, as an SDK would declare it.
struct User: Entity, Equatable {
    static let prefix = "u"
    var id: EntityID<User>
    var firstname = ""
    var lastname = ""
    var email: String? = nil
    var age: Int? = nil
    var gender: Gender? = nil
    var verified = false
    var score = 0.0
    var created: Date? = nil
    var avatar: URL? = nil
    var friends: [EntityID<User>] = []
    var devices: [EntityID<Device>] = []
    var address: Address? = nil
    var tags: [String] = []

    init(id: EntityID<User>) { self.id = id }

    static let fields: [Field<User>] = [
        Field("firstname", \.firstname),
        Field("lastname", \.lastname),
        Field("email", \.email),
        Field("age", \.age),
        Field("gender", \.gender),
        Field("verified", \.verified),
        Field("score", \.score),
        Field("created", \.created),
        Field("avatar", \.avatar),
        Field("friends", \.friends),
        Field("devices", \.devices),
        Field("address", \.address),
        Field("tags", \.tags),
    ]
    static let indexes: [EntityIndex<User>] = [EntityIndex("email", \.email)]
}

enum Gender: String, FieldValue {
    case female, male, other
}

struct Address: FieldRecord {
    var city = ""
    var zip: String? = nil
    init() {}
    static let fields: [Field<Address>] = [Field("city", \.city), Field("zip", \.zip)]
}

struct Device: Entity, Equatable {
    static let prefix = "d"
    var id: EntityID<Device>
    var name = ""
    var model = ""
    var os = ""
    var osVersion = ""
    var pushToken: String? = nil
    var lastSeen: Date? = nil
    init(id: EntityID<Device>) { self.id = id }
    static let fields: [Field<Device>] = [
        Field("name", \.name), Field("model", \.model), Field("os", \.os), Field("osVersion", \.osVersion),
        Field("pushToken", \.pushToken), Field("lastSeen", \.lastSeen),
    ]
}

struct Session: Entity, Equatable {
    static let prefix = "s"
    var id: EntityID<Session>
    var user: EntityID<User>? = nil
    var device: EntityID<Device>? = nil
    var created: Date? = nil
    init(id: EntityID<Session>) { self.id = id }
    static let fields: [Field<Session>] = [
        Field("user", \.user), Field("device", \.device), Field("created", \.created),
    ]
}

func seedRegistry() throws -> EntityRegistry {
    try EntityRegistry([Session.self, User.self, Device.self])
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A type with its own data version key: a stale `rev` is skipped. Indexed by title.
struct Article: Entity, Equatable {
    static let prefix = "ar"
    static let dataVersionKey: String? = "rev"
    var id: EntityID<Article>
    var title = ""
    var rev = 0
    init(id: EntityID<Article>) { self.id = id }
    static let fields: [Field<Article>] = [Field("title", \.title), Field("rev", \.rev)]
    static let indexes: [EntityIndex<Article>] = [EntityIndex("title", \.title)]
}

/// A type without a declared version field: the ingest options name the version key.
struct Note: Entity, Equatable {
    static let prefix = "n"
    var id: EntityID<Note>
    var text = ""
    init(id: EntityID<Note>) { self.id = id }
    static let fields: [Field<Note>] = [Field("text", \.text)]
}

/// Schema version 2: version 1 stored `first` and `last`, version 2 stores `fullName`.
struct Profile: Entity, Equatable {
    static let prefix = "pr"
    static let classVersion = 2
    var id: EntityID<Profile>
    var fullName = ""
    var age = 0
    init(id: EntityID<Profile>) { self.id = id }
    static let fields: [Field<Profile>] = [Field("fullName", \.fullName), Field("age", \.age)]
    static func migrate(_ fields: inout JSONObject, from classVersion: Int) throws {
        if classVersion < 2 {
            let first = fields["first"]?.stringValue ?? ""
            let last = fields["last"]?.stringValue ?? ""
            fields["first"] = nil
            fields["last"] = nil
            fields["fullName"] = .string("\(first) \(last)")
        }
    }
}

func fullRegistry() throws -> EntityRegistry {
    try EntityRegistry([Session.self, User.self, Device.self, Article.self, Note.self, Profile.self])
}

/// A thread-safe box for values that hooks and tasks collect.
final class Box<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withValue<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
    var current: Value { withValue { $0 } }
}

/// Everything a store holds, as comparable text: records with fields and versions, collections.
func fingerprint(_ reader: some StoreReader) -> [String] {
    var lines: [String] = []
    for id in reader.allIDs() {
        guard let record = reader.record(id: id) else { continue }
        var writer = JSONWriter()
        writer.value(.object(record.fields))
        lines.append(
            "\(id) \(record.prefix) v\(record.dataVersion.map { "\($0)" } ?? "-") c\(record.classVersion) "
                + "\(record.presentFields) \(writer.string)")
    }
    for collection in reader.collections.sorted(by: { $0.id < $1.id }) {
        lines.append(
            "\(collection.id) \(collection.displayIdentifier) \(collection.kind) \(collection.total ?? -1) "
                + "\(collection.items.map { $0 ?? "-" })")
    }
    return lines
}

/// Feeds `bytes` to an ingestor in chunks of `size` and finishes.
@discardableResult
func ingestChunked(
    _ store: Store, _ bytes: [UInt8], chunkSize size: Int, endpoint: String? = nil,
    options: IngestOptions = IngestOptions()
) throws -> IngestResult {
    let ingestor = store.makeIngestor(endpoint: endpoint, options: options)
    var start = 0
    while start < bytes.count {
        let end = min(bytes.count, start + size)
        try ingestor.feed(bytes[start..<end])
        start = end
    }
    return try store.commit(ingestor.finish())
}

/// A JSON value with every object's members sorted by key, so values compare whatever the key order.
func canonical(_ value: JSONValue) -> JSONValue {
    switch value {
    case .array(let items): return .array(items.map(canonical))
    case .object(let object):
        return .object(
            JSONObject(object.members.map { (key: $0.key, value: canonical($0.value)) }.sorted { $0.key < $1.key }))
    default: return value
    }
}

func json(_ text: String) throws -> JSONValue { canonical(try JSONValue(parsing: text)) }
