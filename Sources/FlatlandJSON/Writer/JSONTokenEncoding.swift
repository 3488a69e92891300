/// The token encoding of a JSON value that a Flatland store file keeps a record's fields in:
/// what ``JSONWriter`` writes when made with `init(tokensWithCapacity:)`.
///
/// One byte per token kind; a key, string or number is followed by its length (unsigned LEB128)
/// and its bytes: a string's UTF-8 as is (no quotes, no escapes: any byte, NUL too), a number's
/// JSON text. Containers have begin and end tokens and no lengths; there is no punctuation. The
/// kinds are Flatland's `FieldToken.Kind` raw values, so a record's tokens are read in place by
/// the same field decoders as a response's.
package enum JSONTokenEncoding {
    package static let beginObject: UInt8 = 0
    package static let endObject: UInt8 = 1
    package static let beginArray: UInt8 = 2
    package static let endArray: UInt8 = 3
    package static let key: UInt8 = 4
    package static let string: UInt8 = 5
    package static let number: UInt8 = 6
    package static let `true`: UInt8 = 7
    package static let `false`: UInt8 = 8
    package static let null: UInt8 = 9

    /// Whether `bytes` is well-formed UTF-8 (for checking a decoded string token).
    package static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool { UTF8Validation.isValid(bytes) }

    /// Whether `text` is a JSON number (for checking a decoded number token).
    package static func isNumber(_ text: UnsafeRawBufferPointer) -> Bool { NumberParsing.split(text) != nil }
}
