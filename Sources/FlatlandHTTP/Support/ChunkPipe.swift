import Foundation

/// A bounded first-in, first-out buffer of body chunks between the thread that receives a
/// response (the transport's) and the one thread that ingests it.
///
/// The producer copies each chunk in with ``push(_:)`` and blocks while the chunks buffered
/// would exceed ``capacity`` (a chunk larger than the whole capacity still goes through once
/// the buffer is empty), so memory stays bounded whatever the response size. The consumer takes
/// chunks in arrival order with ``pop()``. ``fail(_:)`` and ``cancel()`` wake both sides: the
/// producer then throws, the consumer gets no more chunks.
final class ChunkPipe: @unchecked Sendable {
    /// Why the pipe stopped taking chunks.
    enum Stop {
        case failed(any Error)
        case cancelled
    }

    /// The most bytes buffered at once (see the type's comment for one oversized chunk).
    let capacity: Int
    private let condition = NSCondition()
    private var chunks: [[UInt8]] = []
    private var head = 0
    private var buffered = 0
    private var closed = false
    private var stop: Stop?
    private var peak = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The most bytes that were ever buffered at once.
    var peakBuffered: Int {
        condition.lock()
        defer { condition.unlock() }
        return peak
    }

    /// Whether ``fail(_:)`` or ``cancel()`` stopped the pipe.
    var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stop != nil
    }

    /// Copies `bytes` in, waiting while the buffer is full.
    /// - Throws: the error given to ``fail(_:)``, or `cancelled()` after ``cancel()``.
    func push(_ bytes: UnsafeRawBufferPointer, cancelled: () -> any Error) throws {
        guard !bytes.isEmpty else { return }
        let chunk = [UInt8](bytes)
        condition.lock()
        defer { condition.unlock() }
        while stop == nil && buffered > 0 && buffered + chunk.count > capacity { condition.wait() }
        switch stop {
        case .failed(let error): throw error
        case .cancelled: throw cancelled()
        case nil: break
        }
        chunks.append(chunk)
        buffered += chunk.count
        peak = max(peak, buffered)
        condition.broadcast()
    }

    /// The next chunk, waiting for one; nil once the pipe is closed and empty, or stopped.
    func pop() -> [UInt8]? {
        condition.lock()
        defer { condition.unlock() }
        while stop == nil && head == chunks.count && !closed { condition.wait() }
        guard stop == nil, head < chunks.count else { return nil }
        var chunk: [UInt8] = []
        swap(&chunk, &chunks[head])
        head += 1
        if head == chunks.count || head >= 64 {
            chunks.removeFirst(head)
            head = 0
        }
        buffered -= chunk.count
        condition.broadcast()
        return chunk
    }

    /// No more chunks will come: the consumer takes what is left, then gets nil.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the pipe with an error: buffered chunks are dropped, ``push(_:)`` throws it.
    func fail(_ error: any Error) { halt(.failed(error)) }

    /// Stops the pipe: buffered chunks are dropped, ``push(_:)`` throws.
    func cancel() { halt(.cancelled) }

    private func halt(_ reason: Stop) {
        condition.lock()
        if stop == nil { stop = reason }
        chunks = []
        head = 0
        buffered = 0
        condition.broadcast()
        condition.unlock()
    }
}
