import FlatlandJSON

/// A handler that does nothing but count the events that carry a value or open a container:
/// the cost of parsing alone, for the benchmarks and the instruction-count harness.
public final class NullEventHandler: JSONEventHandler {
    /// Objects and arrays opened, strings, numbers, booleans and nulls read.
    public private(set) var events = 0

    /// A handler with no events counted.
    public init() {}

    public func beginObject() { events &+= 1 }
    public func endObject() {}
    public func beginArray() { events &+= 1 }
    public func endArray() {}
    public func key(_ key: JSONBytes) {}
    public func string(_ value: JSONBytes) { events &+= 1 }
    public func number(_ value: JSONNumberText) { events &+= 1 }
    public func bool(_ value: Bool) { events &+= 1 }
    public func null() { events &+= 1 }
}
