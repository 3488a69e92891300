import Foundation
import Testing

@testable import FlatlandServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A request that asks to close its connection (`Connection: close`) is answered with
/// `Connection: close` and the connection closes (RFC 9112 §9.6). Without the header in the
/// answer, a client that pools connections (libcurl) kept the connection and sent its next
/// request on it after the server had closed it: the write failed before any answer came.
@Suite("Connection: close is answered with Connection: close")
struct ConnectionCloseTests {
    /// Sends `head` on a new connection and reads one response: the response, and whether the
    /// server closed the connection after it.
    static func exchange(port: Int, _ head: String) async -> (RawResponse?, closed: Bool) {
        await offPool {
            let socket = Loopback.connect(port: port)
            guard socket >= 0 else { return (nil, false) }
            defer { close(socket) }
            Loopback.setReceiveTimeout(socket, seconds: 10)
            guard Loopback.send(socket, Array(head.utf8)) else { return (nil, false) }
            let response = Loopback.readResponse(socket)
            return (response, Loopback.isClosed(socket, within: 2))
        }
    }

    @Test(
        "a GET, a POST and a refused request that carry Connection: close each get it back, and the connection closes")
    func aClosingRequestGetsConnectionCloseBack() async throws {
        try await withServer { _, port in
            let heads = [
                "GET /tables/todoitem HTTP/1.1\r\nHost: 127.0.0.1\r\nZUMO-API-VERSION: 2.0.0\r\nConnection: close\r\n\r\n",
                "POST /tables/todoitem HTTP/1.1\r\nHost: 127.0.0.1\r\nZUMO-API-VERSION: 2.0.0\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 25\r\nConnection: close\r\n\r\n"
                    + #"{"id":"c1","text":"once"}"#,
                "GET /tables/todoitem/none HTTP/1.1\r\nHost: 127.0.0.1\r\nZUMO-API-VERSION: 2.0.0\r\n"
                    + "Connection: close\r\n\r\n",
            ]
            for head in heads {
                let (response, closed) = await Self.exchange(port: port, head)
                let answered = try #require(response, "no answer to \(head.prefix(30))")
                #expect(
                    answered.headers["connection"]?.lowercased() == "close", "\(head.prefix(30)): \(answered.headers)")
                #expect(closed, "\(head.prefix(30)): the connection stayed open")
            }
        }
    }

    @Test("a request that keeps its connection gets no Connection: close, and a second request is served on it")
    func aKeptConnectionIsNotClosed() async throws {
        try await withServer { _, port in
            let statuses = await offPool { () -> [Int?] in
                let socket = Loopback.connect(port: port)
                guard socket >= 0 else { return [] }
                defer { close(socket) }
                Loopback.setReceiveTimeout(socket, seconds: 10)
                let head = "GET /tables/todoitem/none HTTP/1.1\r\nHost: 127.0.0.1\r\nZUMO-API-VERSION: 2.0.0\r\n\r\n"
                var statuses: [Int?] = []
                for _ in 0..<2 {
                    guard Loopback.send(socket, Array(head.utf8)) else { return statuses + [nil] }
                    let response = Loopback.readResponse(socket)
                    statuses.append(response?.headers["connection"] == nil ? response?.status : -1)
                }
                return statuses
            }
            #expect(statuses == [404, 404])
        }
    }
}
