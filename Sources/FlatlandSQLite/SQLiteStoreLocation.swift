/// Where the store of one user in one environment lives: one file per `(user, environment)` in
/// a directory the SDK chooses.
///
/// The file name is made from the environment and the user, escaped so that any two different
/// pairs give different names: `flatland-production-u%2D42.sqlite`.
public struct SQLiteStoreLocation: Sendable, Hashable {
    /// The directory of the store files.
    public var directory: String
    /// The user (an id or any stable name).
    public var user: String
    /// The environment (production, development…).
    public var environment: String

    /// A location.
    public init(directory: String, user: String, environment: String) {
        self.directory = directory
        self.user = user
        self.environment = environment
    }

    /// The store file's name.
    public var fileName: String { "flatland-\(Self.escape(environment))-\(Self.escape(user)).sqlite" }

    /// The store file's path.
    public var path: String { directory.hasSuffix("/") ? directory + fileName : directory + "/" + fileName }

    /// Lowercase letters and digits as they are, every other byte as `%XX` (so names differ
    /// on case-insensitive file systems too).
    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
            }
        }
        return out
    }
}
