/// Limits that keep hostile input from exhausting memory or the stack.
///
/// Every limit is checked while the bytes stream in, so an oversized string or number is
/// rejected before the parser has buffered it whole.
public struct JSONLimits: Hashable, Sendable {
    /// The deepest nesting of arrays and objects allowed; the next opening bracket is an error.
    public var maxDepth: Int
    /// The longest string value allowed, in bytes of JSON text (escapes counted as written).
    public var maxStringLength: Int
    /// The longest object key allowed, in bytes of JSON text.
    public var maxKeyLength: Int
    /// The longest number allowed, in characters.
    public var maxNumberLength: Int
    /// The most bytes one parse accepts in total.
    public var maxTotalBytes: Int

    /// Creates limits; every argument has a safe default.
    public init(
        maxDepth: Int = 512,
        maxStringLength: Int = 64 << 20,
        maxKeyLength: Int = 64 << 10,
        maxNumberLength: Int = 1024,
        maxTotalBytes: Int = .max
    ) {
        self.maxDepth = maxDepth
        self.maxStringLength = maxStringLength
        self.maxKeyLength = maxKeyLength
        self.maxNumberLength = maxNumberLength
        self.maxTotalBytes = maxTotalBytes
    }

    /// The defaults: depth 512, strings 64 MiB, keys 64 KiB, numbers 1024 characters, no total.
    public static let `default` = JSONLimits()
}

/// How a ``JSONStreamParser`` reads its input.
///
/// The default is strict RFC 8259, stricter than libyajl alone: form feed and vertical tab are
/// not whitespace,
/// UTF-8 must be valid (no overlongs, no encoded surrogates, nothing above U+10FFFF), `\u`
/// surrogate escapes must pair, and a byte-order mark, trailing garbage or an empty input is an
/// error. Each relaxation is an explicit option.
public struct JSONParserOptions: Hashable, Sendable {
    /// Accept `// line` and `/* block */` comments wherever whitespace may stand.
    public var allowComments: Bool
    /// Accept any number of top-level values separated by whitespace (JSON Lines, concatenated
    /// documents). An empty input, or one of only whitespace and comments, is then valid too.
    public var allowMultipleValues: Bool
    /// Replace each invalid UTF-8 sequence in strings and keys with U+FFFD instead of failing.
    public var replaceInvalidUTF8: Bool
    /// The limits in force.
    public var limits: JSONLimits

    /// Creates options; the defaults are strict RFC 8259 with ``JSONLimits/default``.
    public init(
        allowComments: Bool = false,
        allowMultipleValues: Bool = false,
        replaceInvalidUTF8: Bool = false,
        limits: JSONLimits = .default
    ) {
        self.allowComments = allowComments
        self.allowMultipleValues = allowMultipleValues
        self.replaceInvalidUTF8 = replaceInvalidUTF8
        self.limits = limits
    }

    /// Strict RFC 8259 with default limits.
    public static let strict = JSONParserOptions()
}
