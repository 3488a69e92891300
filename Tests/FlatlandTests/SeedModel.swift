import Flatland
import Foundation

/// The seed's own domain, as an SDK would declare it.
struct User: Entity {
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

struct Device: Entity {
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

struct Session: Entity {
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
