/// A typed entity id: `<prefix>-<rest>`, where the prefix names the entity's type.
///
/// `EntityID<User>("u-lQ7tSlU4A9OmDjIefiOEMG5Dsy02Yt3q")` is a user's id. Server ids and ids
/// made on the device (``generate()``) are the same kind of thing.
public struct EntityID<E: Entity>: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The full id, prefix included.
    public let rawValue: String

    /// Wraps an id string as it is; use ``init(validating:)`` to check its prefix.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The id, if `rawValue` is `<E.prefix>-<at least one character>`.
    public init?(validating rawValue: String) {
        guard let prefix = EntityIDFormat.prefix(of: rawValue), prefix == E.prefix else { return nil }
        self.rawValue = rawValue
    }

    /// A new id made on the device: the type's prefix, `-`, and 32 random URL-safe characters
    /// (190 bits from the system's secure generator).
    public static func generate() -> EntityID<E> { EntityID(EntityIDFormat.generate(prefix: E.prefix)) }

    /// The prefix before the first `-`.
    public var prefix: Substring { rawValue.prefix { $0 != "-" } }

    public var description: String { rawValue }

    public static func < (lhs: EntityID<E>, rhs: EntityID<E>) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The id format shared by typed and untyped entities.
public enum EntityIDFormat {
    /// The URL-safe alphabet of generated ids (RFC 4648 base64url without padding characters).
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// A new id `<prefix>-<32 characters>` from `rng`.
    public static func generate<R: RandomNumberGenerator>(prefix: String, using rng: inout R) -> String {
        generate(prefix: prefix) { rng.next() }
    }

    /// A new id `<prefix>-<32 characters>` from the system's secure generator. (Not through
    /// `generate(prefix:using:)` with an `inout SystemRandomNumberGenerator`: that empty struct's
    /// inout access crashes the thread sanitizer.)
    static func generate(prefix: String) -> String {
        generate(prefix: prefix) { UInt64.random(in: .min ... .max) }
    }

    private static func generate(prefix: String, next: () -> UInt64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8.count + 33)
        bytes.append(contentsOf: prefix.utf8)
        bytes.append(UInt8(ascii: "-"))
        var bits: UInt64 = 0
        var available = 0
        for _ in 0..<32 {
            if available < 6 {
                bits = next()
                available = 64
            }
            bytes.append(alphabet[Int(bits & 63)])
            bits >>= 6
            available -= 6
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The prefix of `id` when it has the form `<prefix>-<rest>` with a prefix of
    /// `[a-z][a-z0-9]*` and a non-empty rest; nil otherwise.
    public static func prefix(of id: String) -> String? {
        var id = id
        return id.withUTF8 { prefix(ofUTF8: UnsafeRawBufferPointer($0)) }
    }

    /// ``prefix(of:)`` on UTF-8 bytes.
    public static func prefix(ofUTF8 bytes: UnsafeRawBufferPointer) -> String? {
        guard let length = prefixLength(bytes) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<length]), as: UTF8.self)
    }

    /// The length of the prefix of `<prefix>-<rest>` UTF-8 bytes, or nil.
    @usableFromInline
    static func prefixLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let first = bytes.first, first &- UInt8(ascii: "a") < 26 else { return nil }
        var i = 1
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "-") { return i + 1 < bytes.count ? i : nil }
            guard b &- UInt8(ascii: "a") < 26 || b &- UInt8(ascii: "0") < 10 else { return nil }
            i += 1
        }
        return nil
    }
}
