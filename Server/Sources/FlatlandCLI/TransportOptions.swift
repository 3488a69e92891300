import ArgumentParser
import FlatlandAsyncHTTPClient
import FlatlandHTTP

/// `--transport`'s values: which HTTP stack a command that talks to a server sends its
/// requests through.
enum TransportChoice: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `URLSession` (libcurl on Linux).
    case urlsession
    /// AsyncHTTPClient on SwiftNIO (the package `FlatlandAsyncHTTPClient`).
    case asynchttpclient

    /// AsyncHTTPClient on Linux, URLSession elsewhere.
    static var platformDefault: TransportChoice {
        #if os(Linux)
            .asynchttpclient
        #else
            .urlsession
        #endif
    }

    /// Makes a new transport of this kind for each backend.
    var makeTransport: @Sendable () -> any HTTPTransport {
        switch self {
        case .urlsession: { URLSessionTransport() }
        case .asynchttpclient: { AsyncHTTPClientTransport() }
        }
    }
}

/// The `--transport` option of every command that talks HTTP (`table`, `sync`, `demo`).
struct TransportOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The HTTP stack: urlsession or asynchttpclient (default: asynchttpclient on Linux, urlsession elsewhere).",
            valueName: "urlsession|asynchttpclient"))
    var transport: TransportChoice = .platformDefault
}
