import FlatlandHTTP
import Foundation
import Synchronization

/// A transport that answers from a script, in order, and records what it was sent: the server
/// side of the telemetry tests, with no network.
final class StubTransport: HTTPTransport {
    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
        var headers: HTTPHeaders = [:]

        init(_ status: Int, _ body: String = "{}", headers: HTTPHeaders = [:]) {
            self.status = status
            self.body = Array(body.utf8)
            self.headers = headers
        }
    }

    private let state: Mutex<(answers: [Answer], sent: [HTTPRequest])>
    /// Requests wait here until released, when set (to keep a GET in flight).
    private let gate: Mutex<CheckedContinuation<Void, Never>?> = Mutex(nil)
    private let holds: Bool
    /// Answers by request, when set (instead of the script).
    private let route: (@Sendable (HTTPRequest) -> Answer)?

    init(_ answers: [Answer], holdFirst: Bool = false) {
        state = Mutex((answers, []))
        holds = holdFirst
        route = nil
    }

    init(route: @escaping @Sendable (HTTPRequest) -> Answer) {
        state = Mutex(([], []))
        holds = false
        self.route = route
    }

    var sent: [HTTPRequest] { state.withLock { $0.sent } }

    /// Lets a held request go on; false when none is held yet.
    func release() -> Bool {
        let held = gate.withLock { g -> CheckedContinuation<Void, Never>? in
            defer { g = nil }
            return g
        }
        guard let waiting = held else { return false }
        waiting.resume()
        return true
    }

    func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead {
        let (answer, first) = state.withLock { s -> (Answer, Bool) in
            s.sent.append(request)
            let answer =
                route?(request)
                ?? (s.answers.isEmpty ? Answer(500, "{\"error\":\"no more answers\"}") : s.answers.removeFirst())
            return (answer, s.sent.count == 1)
        }
        if holds && first {
            await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
        }
        // A status below 100: the connection drops before any answer.
        if answer.status < 100 { throw HTTPError(.transport, "the stub dropped the connection") }
        var headers = answer.headers
        headers["Content-Type"] = "application/json"
        headers["Content-Length"] = "\(answer.body.count)"
        let head = HTTPResponseHead(status: answer.status, headers: headers)
        try receiver.receive(head: head)
        try answer.body.withUnsafeBytes { try receiver.receive(chunk: $0) }
        return head
    }

    func shutdown() {}
}
