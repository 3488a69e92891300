import Flatland

/// A response as the filters see it on the way back.
///
/// For a 2xx response the body has been streamed into an ingest that is applied to the store
/// only when the task completes, after every filter has returned; for any other status the
/// body is kept (at most 64 KiB) as the server's error body.
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The error body of a response that is not 2xx.
    public var errorBody: [UInt8]
    /// Body bytes received.
    public var bytesReceived: Int
    let pending: PendingIngest?

    init(head: HTTPResponseHead, receiver: IngestReceiver) {
        status = head.status
        headers = head.headers
        errorBody = receiver.errorBody
        bytesReceived = receiver.bytes
        pending = receiver.pending
    }

    /// A response made by a filter without going to the network (a cache, a stub): it carries
    /// no ingest.
    public init(status: Int, headers: HTTPHeaders = [:], errorBody: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.errorBody = errorBody
        bytesReceived = 0
        pending = nil
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// An ingest that has read a whole body and waits to be applied.
final class PendingIngest: @unchecked Sendable {
    let ingestor: Ingestor
    init(_ ingestor: Ingestor) { self.ingestor = ingestor }
}

/// Streams a response: a 2xx body into an ingestor, chunk by chunk; any other body into the
/// error body.
final class IngestReceiver: HTTPResponseReceiver, @unchecked Sendable {
    private let lock = Locked(())
    private let makeIngestor: () -> Ingestor
    private let progress: @Sendable (Int) -> Void
    private(set) var errorBody: [UInt8] = []
    private(set) var bytes = 0
    private var ingestor: Ingestor?
    static let maxErrorBody = 64 << 10

    init(makeIngestor: @escaping () -> Ingestor, progress: @escaping @Sendable (Int) -> Void) {
        self.makeIngestor = makeIngestor
        self.progress = progress
    }

    /// The ingest, when the body was a 2xx body with content.
    var pending: PendingIngest? { lock.withLock { _ in bytes > 0 ? ingestor.map(PendingIngest.init) : nil } }

    func receive(head: HTTPResponseHead) throws {
        lock.withLock { _ in
            guard head.isSuccess && head.status != 204 else { return }
            let made = makeIngestor()
            // A page's place from its headers (a bare array with a Link header), where the caller
            // has not said it in the request's IngestOptions.page.
            let fromHeaders = PageHeaders.context(head.headers)
            var context = made.pageContext
            if context.nextLink == nil { context.nextLink = fromHeaders.nextLink }
            if context.total == nil { context.total = fromHeaders.total }
            if context != made.pageContext { made.pageContext = context }
            ingestor = made
        }
    }

    func receive(chunk: UnsafeRawBufferPointer) throws {
        try lock.withLock { _ in
            bytes += chunk.count
            if let ingestor {
                do throws(IngestError) { try ingestor.feed(chunk) } catch { throw error }
            } else if errorBody.count < Self.maxErrorBody {
                errorBody.append(contentsOf: chunk.prefix(Self.maxErrorBody - errorBody.count))
            }
        }
        progress(chunk.count)
    }

    /// Drops the ingest: nothing of it is ever applied.
    func cancel() { lock.withLock { _ in ingestor?.cancel() } }
}
