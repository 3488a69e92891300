import Synchronization

/// A small mutual-exclusion lock for hot shared state: the standard library's `Mutex` over no
/// value, for state that lives in the owner's own stored properties.
final class Lock: Sendable {
    private let mutex = Mutex(())

    @inline(__always)
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try mutex.withLock { _ throws(E) -> R in try body() }
    }
}
