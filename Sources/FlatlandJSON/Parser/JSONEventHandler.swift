/// Receives the events of a streaming parse, in document order.
///
/// A handler is a class so that the parser can reach it from libyajl's C callbacks without
/// copying. Strings, keys and numbers arrive as transient views (``JSONBytes``,
/// ``JSONNumberText``) that are valid only during the call: copy what you keep.
///
/// Any method may throw to stop the parse at once. The parser then fails with
/// ``JSONError/Code-swift.struct/handler`` carrying your error as ``JSONError/underlying``, or with
/// ``JSONError/Code-swift.struct/cancelled`` when you throw `CancellationError`, located where
/// the parse stood. A ``JSONError`` you throw (say, from a number conversion) keeps its code and
/// message and gains the location.
public protocol JSONEventHandler: AnyObject {
    /// `{` was read.
    func beginObject() throws
    /// `}` was read.
    func endObject() throws
    /// `[` was read.
    func beginArray() throws
    /// `]` was read.
    func endArray() throws
    /// An object key, unescaped and valid UTF-8.
    func key(_ key: JSONBytes) throws
    /// A string value, unescaped and valid UTF-8.
    func string(_ value: JSONBytes) throws
    /// A number, as its exact text.
    func number(_ value: JSONNumberText) throws
    /// `true` or `false`.
    func bool(_ value: Bool) throws
    /// `null`.
    func null() throws
}
