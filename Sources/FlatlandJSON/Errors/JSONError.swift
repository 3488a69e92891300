/// A position in a JSON text.
///
/// `offset` counts bytes from the start of the input (0-based). `line` and `column` are 1-based;
/// the column counts Unicode scalars, so a line of Japanese text gives the column an editor shows.
public struct JSONLocation: Hashable, Sendable, CustomStringConvertible {
    /// Bytes before this position, from the start of the whole input (not of the current chunk).
    public var offset: Int
    /// The 1-based line: one more than the number of line feeds before this position.
    public var line: Int
    /// The 1-based column, in Unicode scalars from the start of the line.
    public var column: Int

    /// Creates a location.
    public init(offset: Int, line: Int, column: Int) {
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// `line:column`, as compilers print it.
    public var description: String { "\(line):\(column)" }
}

/// A failure to parse a JSON text, or a failure of the event handler while it was parsed.
///
/// Every error says what went wrong (``code`` and ``message``) and where (``location``, with an
/// ``excerpt`` of the text just before it). The same input gives the same error at the same
/// location however it is split into chunks.
///
/// Where the location points: at the offending byte for a bad character, escape or UTF-8
/// sequence (at the `\u` of a bad surrogate escape); at the first byte of the rejected token for
/// a token in the wrong place (a missing comma, trailing garbage); at the first byte past the
/// limit for a limit; at the end of the input for a truncated one; and just after the token
/// being reported for an error the handler threw.
public struct JSONError: Error, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: UInt8
        let name: String
        init(_ raw: UInt8, _ name: String) {
            self.raw = raw
            self.name = name
        }
        /// The text is not JSON: an unexpected character or token.
        public static let syntax = Code(1, "syntax")
        /// A string holds bytes that are not valid UTF-8, or a `\u` escape names a lone surrogate.
        public static let invalidUTF8 = Code(2, "invalidUTF8")
        /// Arrays and objects are nested deeper than ``JSONLimits/maxDepth``.
        public static let depth = Code(3, "depth")
        /// A string, key, number or the whole input is longer than its limit in ``JSONLimits``.
        public static let limit = Code(4, "limit")
        /// The input ended before the JSON value did (this includes an empty input).
        public static let truncated = Code(5, "truncated")
        /// The handler stopped the parse by throwing `CancellationError`.
        public static let cancelled = Code(6, "cancelled")
        /// A number could not be converted to the type asked for (overflow, not an integer).
        public static let number = Code(7, "number")
        /// The event handler threw an error of its own; it is in ``JSONError/underlying``.
        public static let handler = Code(8, "handler")
        /// The parser was used after it had finished or failed.
        public static let misuse = Code(9, "misuse")

        public var description: String { name }
        public static func == (lhs: Code, rhs: Code) -> Bool { lhs.raw == rhs.raw }
        public func hash(into hasher: inout Hasher) { hasher.combine(raw) }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence for people: what was wrong.
    public var message: String
    /// Where it was found. `nil` only for errors raised outside a parse, such as a number
    /// conversion on a stored ``JSONNumber``.
    public var location: JSONLocation?
    /// Up to 24 bytes of the text before ``location`` and the byte at it, for error messages.
    public var excerpt: String
    /// The handler's own error, for ``Code/handler``.
    public var underlying: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, location: JSONLocation? = nil, excerpt: String = "",
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.location = location
        self.excerpt = excerpt
        self.underlying = underlying
    }

    /// `line:column: message`, or only the message when there is no location.
    public var description: String {
        guard let location else { return message }
        return "\(location.line):\(location.column): \(message)"
    }

    public static func == (lhs: JSONError, rhs: JSONError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.location == rhs.location
            && lhs.excerpt == rhs.excerpt
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(location)
    }
}
