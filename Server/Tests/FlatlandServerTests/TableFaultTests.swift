import FlatlandJSON
import FlatlandServer
import FlatlandServerTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The table routes' body limit and the faults tests inject into them, over loopback.
@Suite("Tables: the body limit and injected faults")
struct TableFaultTests {
    static let v2 = ["ZUMO-API-VERSION": "2.0.0"]

    /// Every byte the server sends for one request until it closes the connection.
    func everyByte(port: Int, _ method: String, _ path: String, body: String? = nil) async -> [UInt8]? {
        await offPool {
            let socket = Loopback.connect(port: port)
            guard socket >= 0 else { return nil }
            defer { close(socket) }
            Loopback.setReceiveTimeout(socket, seconds: 10)
            var head =
                "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nZUMO-API-VERSION: 2.0.0\r\n"
            let bytes = Array((body ?? "").utf8)
            if body != nil { head += "Content-Type: application/json\r\nContent-Length: \(bytes.count)\r\n" }
            guard Loopback.send(socket, Array((head + "\r\n").utf8) + bytes) else { return nil }
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return n == 0 || errno == ECONNRESET ? data : nil }
                data += buffer[0..<n]
            }
        }
    }

    /// A JSON insert body of exactly `size` bytes.
    func body(id: String, size: Int) -> String {
        let frame = #"{"id":"\#(id)","text":""}"#
        return #"{"id":"\#(id)","text":"\#(String(repeating: "x", count: size - frame.utf8.count))"}"#
    }

    @Test(arguments: TestStorage.all)
    func theBodyLimitIsConfigurableAndExactAtItsEdge(_ kind: TestStorage) async throws {
        #expect(TableServing().maxBodyBytes == 1 << 20)
        let configuration = SampleServer.Configuration(tables: TableServing(maxBodyBytes: 200))
        try await withServer(on: kind, configuration) { _, port in
            let atLimit = body(id: "a", size: 200)
            #expect(atLimit.utf8.count == 200)
            let accepted = try await request(port: port, "POST", "/tables/todoitem", body: atLimit, headers: Self.v2)
            #expect(accepted.status == 201)
            let version = try #require(accepted.headers["etag"])

            let over = body(id: "b", size: 201)
            let refused = try await request(port: port, "POST", "/tables/todoitem", body: over, headers: Self.v2)
            #expect(refused.status == 413)
            #expect(refused.json?["error"]?.stringValue?.contains("200") == true)
            let patch = try await request(
                port: port, "PATCH", "/tables/todoitem/a", body: body(id: "a", size: 201), headers: Self.v2)
            #expect(patch.status == 413)

            // Nothing changed: only `a`, at its first version.
            let all = try await request(port: port, "GET", "/tables/todoitem", headers: Self.v2)
            #expect(all.json?.items.compactMap { $0["id"]?.stringValue } == ["a"])
            let a = try await request(port: port, "GET", "/tables/todoitem/a", headers: Self.v2)
            #expect(a.headers["etag"] == version)
        }
    }

    @Test(arguments: TestStorage.all)
    func aLostResponseCommitsThenClosesTheConnectionWithoutAWord(_ kind: TestStorage) async throws {
        try await withServer(on: kind) { server, port in
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            #expect(server.tableFaults.pending == 1)
            let bytes = await everyByte(port: port, "POST", "/tables/todoitem", body: #"{"id":"lost","text":"x"}"#)
            #expect(bytes == [])
            // Through the raw client: a transport error, not an HTTP status.
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem")
            await #expect(throws: RawHTTPError.self) {
                _ = try await request(
                    port: port, "POST", "/tables/todoitem", body: #"{"id":"lost2"}"#, headers: Self.v2)
            }
            // Both rows were committed; the next POST is answered (one shot each).
            let next = try await request(port: port, "POST", "/tables/todoitem", body: #"{"id":"n"}"#, headers: Self.v2)
            #expect(next.status == 201)
            #expect(try await request(port: port, "GET", "/tables/todoitem/lost2", headers: Self.v2).status == 200)
            let row = try await request(port: port, "GET", "/tables/todoitem/lost", headers: Self.v2)
            #expect(row.status == 200)
            #expect(row.json?["text"] == .string("x"))
            #expect(server.tableFaults.pending == 0)
        }
    }

    @Test(arguments: TestStorage.all)
    func anInjectedFailureAnswersWithoutTouchingTheStorage(_ kind: TestStorage) async throws {
        try await withServer(on: kind) { server, port in
            server.tableFaults.inject(.fail(status: 503, retryAfter: "2"), method: "post", times: 2)
            for id in ["a", "b"] {
                let reply = try await request(
                    port: port, "POST", "/tables/todoitem", body: #"{"id":"\#(id)"}"#, headers: Self.v2)
                #expect(reply.status == 503)
                #expect(reply.headers["retry-after"] == "2")
                #expect(reply.json?["error"]?.stringValue != nil)
            }
            server.tableFaults.inject(.fail(status: 500), pathPrefix: "/tables/elsewhere")
            let third = try await request(
                port: port, "POST", "/tables/todoitem", body: #"{"id":"c"}"#, headers: Self.v2)
            #expect(third.status == 201)
            let all = try await request(port: port, "GET", "/tables/todoitem", headers: Self.v2)
            #expect(all.json?.items.compactMap { $0["id"]?.stringValue } == ["c"])
            #expect(server.tableFaults.pending == 1)
            server.tableFaults.reset()
            #expect(server.tableFaults.pending == 0)
        }
    }

    @Test(arguments: TestStorage.all)
    func aQueryCutMidBodyIsATransportErrorAndTheNextIsWhole(_ kind: TestStorage) async throws {
        try await withServer(on: kind) { server, port in
            for i in 0..<10 {
                _ = try await request(
                    port: port, "POST", "/tables/todoitem", body: #"{"id":"r\#(i)","text":"row \#(i)"}"#,
                    headers: Self.v2)
            }
            server.tableFaults.inject(.dropMidBody(), method: "GET", pathPrefix: "/tables/todoitem")
            let bytes = try #require(await everyByte(port: port, "GET", "/tables/todoitem"))
            let text = String(decoding: bytes, as: UTF8.self)
            let parts = text.components(separatedBy: "\r\n\r\n")
            #expect(parts[0].hasPrefix("HTTP/1.1 200"))
            let length = parts[0].split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }
            let sent = parts.dropFirst().joined(separator: "\r\n\r\n").utf8.count
            let full = try #require(length)
            #expect(sent == full / 2)

            server.tableFaults.inject(.dropMidBody(afterBytes: 5), method: "GET")
            await #expect(throws: RawHTTPError.self) {
                _ = try await request(port: port, "GET", "/tables/todoitem", headers: Self.v2)
            }
            let whole = try await request(port: port, "GET", "/tables/todoitem", headers: Self.v2)
            #expect(whole.body.count == full)
            #expect(whole.json?.items.count == 10)
        }
    }

    @Test(arguments: TestStorage.all)
    func aDelayedRequestIsServedLateAndOnlyTheMatchingMethodWaits(_ kind: TestStorage) async throws {
        try await withServer(on: kind) { server, port in
            server.tableFaults.inject(.delay(.milliseconds(400)), method: "POST")
            let clock = ContinuousClock()
            #expect(try await request(port: port, "GET", "/tables/todoitem", headers: Self.v2).status == 200)
            #expect(server.tableFaults.pending == 1)
            let slow = try await clock.measure {
                let reply = try await request(
                    port: port, "POST", "/tables/todoitem", body: #"{"id":"late"}"#, headers: Self.v2)
                #expect(reply.status == 201)
            }
            #expect(slow >= .milliseconds(400))
            #expect(server.tableFaults.pending == 0)
        }
    }
}
