import Synchronization

/// A value behind a lock: the one way FlatlandHTTP shares mutable state between threads.
///
/// A class over the standard library's `Mutex`, so that the state can be a stored `let` of a
/// copyable type and is `Sendable` as the compiler checks it: the value goes in and out of the
/// lock by `sending`, never as a reference that outlives the critical section.
final class Locked<Value>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: sending Value) { mutex = Mutex(value) }

    func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E)
        -> sending Result
    {
        try mutex.withLock(body)
    }
}

extension Locked where Value: Sendable {
    /// The value now (a copy).
    var current: Value { withLock { $0 } }
}
