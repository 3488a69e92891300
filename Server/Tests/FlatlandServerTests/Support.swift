import FlatlandJSON
import FlatlandServer
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs `body` against a sample server on 127.0.0.1, port 0, and stops it afterwards.
func withServer<R>(
    _ configuration: SampleServer.Configuration = .init(population: .init(users: 4, sessions: 2)),
    _ body: (SampleServer, Int) async throws -> R
) async throws -> R {
    let server = SampleServer(configuration: configuration)
    let port = try await server.start()
    do {
        let result = try await body(server, port)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// An HTTP response read from a raw socket.
struct RawResponse: Sendable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    /// The body as JSON (nil if it is empty or not JSON).
    var json: JSONValue? { body.isEmpty ? nil : try? JSONValue(parsing: body) }
}

/// A failure of the raw client, with what it was doing.
struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
}

/// Runs blocking socket work on its own thread, so that it never holds one of the few threads
/// of the concurrency pool that the server's handlers also run on.
func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// One request on a new connection to 127.0.0.1:`port` (`Connection: close`), with a
/// bearer `token` if given.
func request(
    port: Int, _ method: String, _ path: String, token: String? = nil, body: String? = nil,
    headers: [String: String] = [:]
) async throws -> RawResponse {
    let result = await offPool { () -> Result<RawResponse, RawHTTPError> in
        let socket = Loopback.connect(port: port)
        guard socket >= 0 else { return .failure(RawHTTPError(description: "connect to \(port) failed")) }
        defer { close(socket) }
        Loopback.setReceiveTimeout(socket, seconds: 10)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let bytes = Array((body ?? "").utf8)
        if body != nil { head += "Content-Type: application/json\r\nContent-Length: \(bytes.count)\r\n" }
        guard Loopback.send(socket, Array((head + "\r\n").utf8) + bytes) else {
            return .failure(RawHTTPError(description: "sending \(method) \(path) failed"))
        }
        return Loopback.readResponse(socket).map(Result.success)
            ?? .failure(RawHTTPError(description: "no complete response to \(method) \(path)"))
    }
    return try result.get()
}

/// Plain blocking sockets on loopback, for clients the server must survive.
enum Loopback {
    /// A TCP connection to 127.0.0.1:`port`: the socket, or -1.
    static func connect(port: Int) -> Int32 {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return -1 }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Glibc)
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                    Darwin.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
        guard status == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    static func setReceiveTimeout(_ socket: Int32, seconds: Double) {
        var timeout = timeval()
        timeout.tv_sec = .init(seconds.rounded(.down))
        timeout.tv_usec = .init((seconds - seconds.rounded(.down)) * 1e6)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends all of `bytes`; false on an error.
    static func send(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { buffer in
                #if canImport(Glibc)
                    Glibc.send(socket, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #else
                    Darwin.send(socket, buffer.baseAddress, buffer.count, 0)
                #endif
            }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// Whether the server has closed `socket`: a read within `seconds` ends with end of file
    /// or a reset. False if the read times out (the connection is still open) or data comes.
    static func isClosed(_ socket: Int32, within seconds: Double) -> Bool {
        setReceiveTimeout(socket, seconds: seconds)
        var byte: UInt8 = 0
        let count = recv(socket, &byte, 1, 0)
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Reads one response: the head, then `Content-Length` bytes of body (or up to end of file
    /// when there is none). Nil if the connection ends or times out first.
    static func readResponse(_ socket: Int32) -> RawResponse? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        func fill() -> Bool {
            let n = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return false }
            data += buffer[0..<n]
            return true
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            guard fill() else { return nil }
            headEnd = data.indices.dropLast(3).first { data[$0..<$0 + 4].elementsEqual(separator) }
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: data[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let bodyStart = headEnd + 4
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            while data.count - bodyStart < length { guard fill() else { return nil } }
            return RawResponse(status: status, headers: headers, body: Array(data[bodyStart..<bodyStart + length]))
        }
        if status == 204 || status == 304 { return RawResponse(status: status, headers: headers, body: []) }
        while fill() {}
        return RawResponse(status: status, headers: headers, body: Array(data[bodyStart...]))
    }
}

extension JSONValue {
    /// The members of an object (empty for anything else).
    var members: [String: JSONValue] {
        guard case .object(let object) = self else { return [:] }
        var members: [String: JSONValue] = [:]
        for (key, value) in object { members[key] = value }
        return members
    }

    /// The elements of an array, or of a slice's `data` (empty for anything else).
    var items: [JSONValue] {
        if case .array(let items) = self { return items }
        if case .array(let items)? = self["data"] { return items }
        return []
    }
}
