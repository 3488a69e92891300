/// An HTTP method: `GET`, `POST`, …, or any other token.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method's token, upper case.
    public let rawValue: String

    /// A method from its token; it is upper-cased.
    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }
    /// A method from a literal: `"GET"`.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// `GET`
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `POST`
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `OPTIONS`
    public static let options = HTTPMethod(rawValue: "OPTIONS")

    /// Whether sending the request twice has the effect of sending it once (RFC 9110 §9.2.2):
    /// only these are ever retried.
    public var isIdempotent: Bool {
        switch rawValue {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE": true
        default: false
        }
    }

    public var description: String { rawValue }
}
