import ArgumentParser
import FlatlandAsyncHTTPClient
import FlatlandHTTP

/// `--transport` of bench-sync and bench-http: the HTTP transport of the measured device's
/// session. URLSession is the default, so that earlier scripts keep measuring what they did.
enum BenchTransport: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `URLSessionTransport` (libcurl on Linux).
    case urlsession
    /// `AsyncHTTPClientTransport` (the package FlatlandAsyncHTTPClient).
    case asynchttpclient

    /// The option's help.
    static let help = ArgumentHelp(
        "The measured session's HTTP transport: urlsession (the default) or asynchttpclient.",
        valueName: "urlsession|asynchttpclient")

    /// Makes a new transport of this kind for each backend.
    var makeTransport: @Sendable () -> any HTTPTransport {
        switch self {
        case .urlsession: { URLSessionTransport() }
        case .asynchttpclient: { AsyncHTTPClientTransport() }
        }
    }
}
