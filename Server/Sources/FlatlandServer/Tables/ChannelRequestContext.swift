import Hummingbird
import NIOCore

/// Hummingbird's basic request context, with the connection's channel: the server closes it to
/// lose a response (a lost response injected by a test).
struct ChannelRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
