/// Receives one response as it arrives: the head, then the body in chunks.
///
/// A receiver that throws stops the request: the transport cancels it and throws that error.
public protocol HTTPResponseReceiver: AnyObject, Sendable {
    /// The status line and headers, once, before any chunk.
    func receive(head: HTTPResponseHead) throws
    /// The next chunk of the body; the bytes are valid only during the call. The call may take
    /// the time of reading the chunk (a session reads a small body that arrives whole on the
    /// calling thread), so a transport calls it where it may wait, not on an event loop.
    func receive(chunk: UnsafeRawBufferPointer) throws
}

/// Sends requests and streams their responses.
///
/// ``URLSessionTransport`` is the implementation for Linux (FoundationNetworking) and Apple
/// platforms; tests and other stacks can bring their own.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and hands the response to `receiver` as it arrives; returns the head once
    /// the whole body has been received.
    ///
    /// - Throws: ``HTTPError`` ``HTTPError/Code-swift.struct/transport`` when the request fails or
    ///   the connection drops before the body is complete, ``HTTPError/Code-swift.struct/cancelled``
    ///   when the calling task is cancelled, or the receiver's own error.
    func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead

    /// Cancels everything in flight and releases the transport's resources; later sends fail.
    func shutdown()
}
