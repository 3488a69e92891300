import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Counts a server's open connections and decides whether one more may be served.
final class ConnectionCounter: Sendable {
    let limit: Int
    private let open = NIOLockedValueBox(0)

    init(limit: Int) { self.limit = max(0, limit) }

    /// Connections open now (admitted and not yet closed).
    var count: Int { open.withLockedValue { $0 } }

    /// Counts a new connection if there is room; false past the limit.
    func admit() -> Bool {
        open.withLockedValue { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() { open.withLockedValue { $0 -= 1 } }
}

/// Hummingbird's HTTP/1.1 child channel with the guards a server on an open port needs:
///
/// - a connection cap: past ``ConnectionCounter/limit`` open connections, a new one is closed
///   as soon as it is accepted, without touching the others;
/// - a header read timeout: once the first byte of a request arrives, its head (request line
///   and header fields) must be complete within `headerTimeout`, or the connection is closed;
/// - an idle timeout (Hummingbird's own, `HTTP1Channel.Configuration.idleTimeout`): a
///   connection with no request in progress and nothing received for that long is closed.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http1: HTTP1Channel
    let headerTimeout: TimeAmount
    let connections: ConnectionCounter

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = connections.admit()
        if admitted {
            let connections = self.connections
            channel.closeFuture.whenComplete { _ in connections.release() }
        }
        let headerTimeout = self.headerTimeout
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            guard admitted else {
                // Past the cap: the channel is handed on (the server's accept loop must not fail)
                // but closed at once, so its handler sees an ended stream.
                channel.close(promise: nil)
                return value
            }
            let clock = HeaderClock(timeout: headerTimeout)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(HeaderClock.BytesIn(clock), position: .first)
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(HeaderClock.PartsInOut(clock), position: .before(state))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

/// The header read deadline of one connection, on its event loop. Two handlers share it: one
/// before the HTTP decoder sees the bytes of a new request arrive and starts the clock, one
/// after it sees the request head complete (stops the clock) and the response end (the next
/// request's head is awaited again).
final class HeaderClock {
    let timeout: TimeAmount
    /// Request heads received minus responses ended: 0 means the next head is awaited.
    private var inFlight = 0
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func bytesArrived(_ context: ChannelHandlerContext) {
        guard inFlight == 0, deadline == nil else { return }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            context.close(promise: nil)
        }
    }

    func headArrived() {
        inFlight += 1
        stop()
    }

    func responseEnded() { inFlight = max(0, inFlight - 1) }

    func stop() {
        deadline?.cancel()
        deadline = nil
    }

    /// Before the decoder: raw bytes.
    final class BytesIn: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let clock: HeaderClock

        init(_ clock: HeaderClock) { self.clock = clock }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            clock.bytesArrived(context)
            context.fireChannelRead(data)
        }

        func channelInactive(context: ChannelHandlerContext) {
            clock.stop()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { clock.stop() }
    }

    /// After the decoder: request and response parts.
    final class PartsInOut: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTP1Channel.Value.InboundPart
        typealias InboundOut = HTTP1Channel.Value.InboundPart
        typealias OutboundIn = HTTP1Channel.Value.OutboundPart
        typealias OutboundOut = HTTP1Channel.Value.OutboundPart
        let clock: HeaderClock

        init(_ clock: HeaderClock) { self.clock = clock }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head = unwrapInboundIn(data) { clock.headArrived() }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) { clock.responseEnded() }
            context.write(data, promise: promise)
        }
    }
}

/// Names the part types of an async channel (HTTP request and response parts for HTTP/1.1), so
/// that the handlers above can name them without importing the module that declares them.
protocol ChannelPartTypes {
    associatedtype InboundPart
    associatedtype OutboundPart
}

extension NIOAsyncChannel: ChannelPartTypes {
    typealias InboundPart = Inbound
    typealias OutboundPart = Outbound
}
