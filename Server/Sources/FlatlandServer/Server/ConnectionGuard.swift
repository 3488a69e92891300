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
/// - the deadlines of ``ConnectionClock``: a request's head, a request's body, a client that
///   stops reading its response, and an idle connection (Hummingbird's own idle timeout is
///   not used: it counts a response as done once its last byte is queued, and closing then
///   drops what the client has not read yet).
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http1: HTTP1Channel
    let deadlines: ConnectionClock.Deadlines
    let connections: ConnectionCounter

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = connections.admit()
        if admitted {
            let connections = self.connections
            channel.closeFuture.whenComplete { _ in connections.release() }
        }
        let deadlines = self.deadlines
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            guard admitted else {
                // Past the cap: the channel is handed on (the server's accept loop must not fail)
                // but closed at once, so its handler sees an ended stream.
                channel.close(promise: nil)
                return value
            }
            let clock = ConnectionClock(deadlines)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(ConnectionClock.BytesInOut(clock), position: .first)
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(ConnectionClock.PartsInOut(clock), position: .before(state))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

/// The deadlines of one connection, on its event loop. Two handlers feed it: one at the socket
/// (bytes in, and writes out with their completion), one after the HTTP codec (request heads
/// and ends in, response ends out). At any moment the connection is in one or more of these
/// states, each with its deadline; the earliest one that passes closes the connection:
///
/// - a request head is arriving (its first byte came): ``Deadlines/header`` from that byte;
/// - a request body is arriving (its head came, not its end): ``Deadlines/body`` from the
///   head, however the bytes trickle in;
/// - bytes are written and not yet taken by the client's socket: ``Deadlines/write`` from the
///   last write that completed (a client that reads, however slowly, keeps it moving; one that
///   stops reading is cut);
/// - nothing is in progress (no request open, nothing left to write): ``Deadlines/idle``
///   from the last byte received or written.
///
/// A request being answered (the server working on it) has no deadline of its own.
final class ConnectionClock {
    /// The timeouts, as ``SampleServer/Limits`` gives them.
    struct Deadlines: Sendable {
        var header: TimeAmount
        var body: TimeAmount
        var write: TimeAmount
        var idle: TimeAmount
    }

    let deadlines: Deadlines
    /// When the head now arriving began (its first byte), if one is.
    private var headStarted: NIODeadline?
    /// When the head of the request whose body is arriving came, if one is.
    private var bodyStarted: NIODeadline?
    /// Request heads received minus responses ended.
    private var open = 0
    /// Writes handed to the socket and not completed.
    private var pendingWrites = 0
    /// The last write completed (or the first pending one begun).
    private var lastWriteProgress = NIODeadline.now()
    /// The last byte received or written.
    private var lastActivity = NIODeadline.now()
    private var timer: Scheduled<Void>?
    private var timerAt: NIODeadline?
    private var closed = false

    init(_ deadlines: Deadlines) { self.deadlines = deadlines }

    /// The earliest deadline that applies now, if any.
    private var nextDeadline: NIODeadline? {
        var candidates: [NIODeadline] = []
        if let headStarted { candidates.append(headStarted + deadlines.header) }
        if let bodyStarted { candidates.append(bodyStarted + deadlines.body) }
        if pendingWrites > 0 { candidates.append(lastWriteProgress + deadlines.write) }
        if open == 0, pendingWrites == 0, headStarted == nil { candidates.append(lastActivity + deadlines.idle) }
        return candidates.min()
    }

    /// Closes the connection if a deadline has passed, else sets the timer for the next one.
    fileprivate func check(_ context: ChannelHandlerContext) {
        guard !closed else { return }
        guard let next = nextDeadline else {
            timer?.cancel()
            timer = nil
            timerAt = nil
            return
        }
        if next <= .now() {
            closed = true
            timer?.cancel()
            timer = nil
            context.close(promise: nil)
            return
        }
        // Keep a timer that fires at or before the deadline; an earlier one re-checks.
        if let timerAt, timerAt <= next, timer != nil { return }
        timer?.cancel()
        timerAt = next
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: next) { [self] in
            timer = nil
            timerAt = nil
            check(context)
        }
    }

    fileprivate func stop() {
        closed = true
        timer?.cancel()
        timer = nil
    }

    fileprivate func bytesArrived() {
        lastActivity = .now()
        if open == 0, headStarted == nil { headStarted = .now() }
    }

    fileprivate func headArrived() {
        open += 1
        headStarted = nil
        bodyStarted = .now()
    }

    fileprivate func requestEnded() { bodyStarted = nil }

    fileprivate func responseEnded() { open = max(0, open - 1) }

    fileprivate func writeBegan() {
        if pendingWrites == 0 { lastWriteProgress = .now() }
        pendingWrites += 1
    }

    fileprivate func writeCompleted() {
        pendingWrites = max(0, pendingWrites - 1)
        lastWriteProgress = .now()
        lastActivity = lastWriteProgress
    }

    /// At the socket: raw bytes in, writes out (each write's completion is progress).
    final class BytesInOut: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = IOData
        typealias OutboundOut = IOData
        let clock: ConnectionClock

        init(_ clock: ConnectionClock) { self.clock = clock }

        func handlerAdded(context: ChannelHandlerContext) { clock.check(context) }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            clock.bytesArrived()
            clock.check(context)
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            clock.writeBegan()
            let done = promise ?? context.eventLoop.makePromise(of: Void.self)
            let clock = self.clock
            done.futureResult.assumeIsolated().whenComplete { _ in
                clock.writeCompleted()
                clock.check(context)
            }
            context.write(data, promise: done)
            clock.check(context)
        }

        func channelInactive(context: ChannelHandlerContext) {
            clock.stop()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { clock.stop() }
    }

    /// After the codec: request and response parts.
    final class PartsInOut: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTP1Channel.Value.InboundPart
        typealias InboundOut = HTTP1Channel.Value.InboundPart
        typealias OutboundIn = HTTP1Channel.Value.OutboundPart
        typealias OutboundOut = HTTP1Channel.Value.OutboundPart
        let clock: ConnectionClock

        init(_ clock: ConnectionClock) { self.clock = clock }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head: clock.headArrived()
            case .end: clock.requestEnded()
            case .body: break
            }
            clock.check(context)
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) { clock.responseEnded() }
            context.write(data, promise: promise)
            clock.check(context)
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
