import Foundation

/// Runs `body`, which blocks (SQLite reads and writes, file removal), on a dispatch queue and
/// waits for it without holding a thread of Swift's cooperative pool: the pool has only as
/// many threads as cores, and a blocked one stalls every task. (Package-wide: the sync
/// engine's commits use it too.)
package func runBlocking<R: Sendable>(_ body: @escaping @Sendable () -> R) async -> R {
    await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: body()) }
    }
}
