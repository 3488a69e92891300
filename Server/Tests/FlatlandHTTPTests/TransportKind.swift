import FlatlandAsyncHTTPClient
import FlatlandHTTP
import Testing

/// The transports every transport-dependent case runs on: `@Test(arguments: TransportKind.allCases)`.
enum TransportKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case urlSession
    case asyncHTTPClient

    var testDescription: String { rawValue }

    /// Makes a new transport of this kind (a backend's ``Backend/Configuration/makeTransport``).
    var makeTransport: @Sendable () -> any HTTPTransport {
        switch self {
        case .urlSession: { URLSessionTransport() }
        case .asyncHTTPClient: { AsyncHTTPClientTransport() }
        }
    }

    /// A new transport of this kind.
    func make() -> any HTTPTransport { makeTransport() }
}
