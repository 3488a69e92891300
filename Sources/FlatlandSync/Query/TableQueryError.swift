/// A query that cannot be written, or a value a query cannot hold.
public struct TableQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A date that is not ISO 8601 with a zone.
        public static let invalidDate = Code(rawValue: "invalidDate")
        /// A name that is no system property.
        public static let invalidSystemProperty = Code(rawValue: "invalidSystemProperty")
        /// A user parameter whose name the protocol reserves (`$…`, `__includeDeleted`,
        /// `__systemproperties`).
        public static let reservedParameter = Code(rawValue: "reservedParameter")
        /// A `$top` or `$skip` below zero, or a field name that is empty.
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// An option the protocol does not have (`__systemproperties` outside v1).
        public static let unsupported = Code(rawValue: "unsupported")
    }

    /// What went wrong.
    public var code: Code
    /// Says what and where.
    public var message: String

    /// An error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
