/// Where the store of one user in one environment lives: one file per `(user, environment)` in
/// a directory the SDK chooses.
///
/// The file name is made from the environment and the user, escaped so that any two different
/// pairs give different names and no name can leave the directory (`/` and `.` are escaped
/// like every byte other than a lowercase letter or a digit): `flatland-production-u%2D42.sqlite`.
/// When that name would be longer than ``maximumFileNameLength`` bytes (file systems allow 255),
/// it is cut and ends with the SHA-256 of the whole pair instead, which keeps it unique:
/// `flatland-production-<start of the escaped user>_<64 hex digits>.sqlite`.
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

    /// The longest file name this makes, in bytes.
    public static let maximumFileNameLength = 200

    /// The store file's name.
    public var fileName: String {
        let readable = "flatland-\(Self.escape(environment))-\(Self.escape(user))"
        guard readable.utf8.count + 7 > Self.maximumFileNameLength else { return readable + ".sqlite" }
        // The environment's and the user's lengths go into the hash, so no two pairs hash the
        // same text.
        let digest = SHA256.hex(Array("\(environment.utf8.count):\(environment)\(user.utf8.count):\(user)".utf8))
        let keep = Self.maximumFileNameLength - ".sqlite".utf8.count - digest.count - 1
        // The escaped text is ASCII: cutting it by characters cuts it by bytes. `_` never occurs
        // in an escaped name, so a cut name cannot equal a whole one.
        return String(readable.prefix(keep)) + "_" + digest + ".sqlite"
    }

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
