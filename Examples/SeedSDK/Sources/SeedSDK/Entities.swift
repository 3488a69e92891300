import Flatland
import Foundation

/// A user of the seed's API.
public struct User: Entity, Equatable {
    public static let prefix = "u"
    public var id: EntityID<User>
    public var firstname = ""
    public var lastname = ""
    public var email = ""
    public var age = 0
    public var created: Date?
    public var devices: [EntityID<Device>] = []
    public var friends: [EntityID<User>] = []

    public init(id: EntityID<User>) { self.id = id }

    public static let fields: [Field<User>] = [
        Field("firstname", \.firstname), Field("lastname", \.lastname), Field("email", \.email), Field("age", \.age),
        Field("created", \.created), Field("devices", \.devices), Field("friends", \.friends),
    ]
}

/// A device of a user.
public struct Device: Entity, Equatable {
    public static let prefix = "d"
    public var id: EntityID<Device>
    public var name = ""
    public var model = ""
    public var os = ""
    public var lastSeen: Date?

    public init(id: EntityID<Device>) { self.id = id }

    public static let fields: [Field<Device>] = [
        Field("name", \.name), Field("model", \.model), Field("os", \.os), Field("lastSeen", \.lastSeen),
    ]
}

/// A login: one user on one device, with its token.
public struct Session: Entity, Equatable {
    public static let prefix = "s"
    public var id: EntityID<Session>
    public var token = ""
    public var confirmed = false
    public var created: Date?
    public var user: EntityID<User>?
    public var device: EntityID<Device>?

    public init(id: EntityID<Session>) { self.id = id }

    public static let fields: [Field<Session>] = [
        Field("token", \.token), Field("confirmed", \.confirmed), Field("created", \.created),
        Field("user", \.user), Field("device", \.device),
    ]
}
