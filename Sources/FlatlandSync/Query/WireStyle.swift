/// How a query is spelled on the wire: the habits of one official client family.
///
/// The official clients agree on the grammar but not on the spelling, and their own unit tests
/// pin the spelling byte for byte: .NET writes dates with seven digits and an offset and leaves
/// `:` as it is; iOS writes milliseconds in UTC, encodes `:` as `%3A` and writes `asc`; the
/// Mobile Services .NET client encodes `:` and `,`; Datasync casts dates. Every style writes a
/// space as `%20` (never `+`) and the `+` of an offset as `%2B`.
///
/// Each ``TableProtocol`` has a default (``default(for:)``): ``mobileServices`` for v1,
/// ``dotNet`` for v2 and ``datasync`` for v3.
public struct WireStyle: Sendable, Hashable {
    /// How date literals are written.
    public enum Dates: Sendable, Hashable {
        /// `datetimeoffset'1970-01-01T00:00:00.0000000+00:00'`.
        case dotNet
        /// `datetimeoffset'1970-01-01T00:00:00.000Z'`.
        case milliseconds
        /// `cast(1970-01-01T00:00:00.000Z,Edm.DateTimeOffset)`.
        case cast
    }

    /// How date literals are written.
    public var dates: Dates
    /// Whether `:` is sent as `%3A`.
    public var encodesColon: Bool
    /// Whether `,` is sent as `%2C`.
    public var encodesComma: Bool
    /// Whether an ascending `$orderby` says `asc`.
    public var writesAscending: Bool
    /// Whether date literals keep every fractional digit of the timestamp (up to nine, trailing
    /// zeros dropped, in UTC) rather than the client family's own precision. The official
    /// clients write milliseconds (iOS, Datasync) or seven digits (.NET); a server that keeps
    /// more than the literal says cannot then be asked for the rows of one exact `updatedAt`,
    /// which a pull by key needs (``PullOptions/Paging/key``).
    public var fullPrecisionDates: Bool

    /// A style.
    public init(
        dates: Dates, encodesColon: Bool, encodesComma: Bool, writesAscending: Bool, fullPrecisionDates: Bool = false
    ) {
        self.dates = dates
        self.encodesColon = encodesColon
        self.encodesComma = encodesComma
        self.writesAscending = writesAscending
        self.fullPrecisionDates = fullPrecisionDates
    }

    /// The Mobile Apps .NET client (v2): `$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00:00:00.0000000%2B00:00')&$orderby=updatedAt`.
    public static let dotNet = WireStyle(
        dates: .dotNet, encodesColon: false, encodesComma: false, writesAscending: false)
    /// The Mobile Apps iOS client (v2): `$filter=(updatedAt%20ge%20datetimeoffset'1970-01-01T00%3A00%3A00.000Z')&$orderby=updatedAt%20asc`.
    public static let iOS = WireStyle(
        dates: .milliseconds, encodesColon: true, encodesComma: false, writesAscending: true)
    /// The Mobile Services .NET client (v1): `datetimeoffset'1970-01-01T00%3A00%3A00.0000000%2B00%3A00'`,
    /// `__systemproperties=__updatedAt%2C__deleted`.
    public static let mobileServices = WireStyle(
        dates: .dotNet, encodesColon: true, encodesComma: true, writesAscending: false)
    /// The Datasync clients (v3): `cast(2024-08-23T20:22:54.291Z,Edm.DateTimeOffset)`.
    public static let datasync = WireStyle(
        dates: .cast, encodesColon: false, encodesComma: false, writesAscending: false)

    /// The style a protocol uses unless told otherwise.
    public static func `default`(for version: TableProtocol) -> WireStyle {
        switch version {
        case .v1: .mobileServices
        case .v2: .dotNet
        case .v3: .datasync
        }
    }

    /// `text` percent-encoded for a query string in this style: letters, digits, `-._~` and
    /// `'()*!$` as they are, `:` and `,` as the style says, every other byte of its UTF-8 as `%XX`.
    public func encode(_ text: String) -> String { percentEncode(text, keeping: keeps) }

    private func keeps(_ b: UInt8) -> Bool {
        switch b {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39: true  // A-Z a-z 0-9
        case 0x2D, 0x2E, 0x5F, 0x7E: true  // - . _ ~
        case 0x27, 0x28, 0x29, 0x2A, 0x21, 0x24: true  // ' ( ) * ! $
        case 0x3A: !encodesColon
        case 0x2C: !encodesComma
        default: false
        }
    }
}

/// `text` with every byte of its UTF-8 that `keeping` refuses written as `%XX` (upper-case hex).
func percentEncode(_ text: String, keeping: (UInt8) -> Bool) -> String {
    let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(text.utf8.count)
    for byte in text.utf8 {
        if keeping(byte) {
            out.append(byte)
        } else {
            out.append(0x25)
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
    }
    return String(decoding: out, as: UTF8.self)
}
