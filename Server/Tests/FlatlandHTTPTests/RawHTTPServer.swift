import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A loopback HTTP/1.1 server on plain blocking sockets, one thread per connection, for the
/// transport cases a well-behaved server cannot play: a body written as fast as the socket
/// takes it (counting what it wrote), an answer that never comes, a connection closed after the
/// request was read. Each connection reads a request and hands it to `handle`, then reads the
/// next one on the same connection while `handle` returns true (keep-alive), or closes.
///
/// Its threads are its own: neither the cooperative pool nor an event loop serves it, so a busy
/// test process never delays what it writes (the timing cases depend on that).
final class RawHTTPServer: @unchecked Sendable {
    /// One request as read off the socket.
    struct Request: Sendable {
        var method: String
        var path: String
        /// Header names in lower case.
        var headers: [String: String]
        var body: [UInt8]
    }

    /// The connection a handler answers on.
    final class Connection: @unchecked Sendable {
        let fd: Int32
        init(fd: Int32) { self.fd = fd }

        /// Writes all of `bytes`, blocking while the socket is full; false once the peer is gone.
        @discardableResult
        func write(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }

        @discardableResult
        func write(_ text: String) -> Bool { write(Array(text.utf8)) }

        /// Waits, reading and dropping what comes, until the peer closes the connection (or the
        /// server stops); the seconds it took, measured on this thread, or nil after `limit`.
        func secondsUntilClosed(limit: Double = 60) -> Double? {
            let start = DispatchTime.now()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
                if elapsed >= limit { return nil }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, Int32(min(1000, (limit - elapsed) * 1000 + 1)))
                if ready < 0 && errno != EINTR { return elapsed }
                guard ready > 0 else { continue }
                if recv(fd, &buffer, buffer.count, 0) <= 0 {
                    return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
                }
            }
        }
    }

    let port: Int
    private let listener: Int32
    private let handle: @Sendable (Request, Connection) -> Bool
    private let lock = NSLock()
    private var requests: [Request] = []
    private var open: [Int32] = []
    private var stopped = false

    /// Starts listening on 127.0.0.1, port 0.
    init(handle: @escaping @Sendable (Request, Connection) -> Bool) throws {
        self.handle = handle
        #if os(Linux)
            // Not inherited by a child process some other test starts.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Every request read so far, in arrival order.
    var received: [Request] { lock.withLock { requests } }

    /// Closes the listener and every connection still open.
    func stop() {
        let fds = lock.withLock {
            stopped = true
            return open
        }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let keep = lock.withLock {
                if !stopped { open.append(fd) }
                return !stopped
            }
            guard keep else {
                close(fd)
                return
            }
            let thread = Thread { [self] in serve(fd) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            lock.withLock { open.removeAll { $0 == fd } }
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        var leftover: [UInt8] = []
        while let request = readRequest(fd, &leftover) {
            lock.withLock { requests.append(request) }
            guard handle(request, Connection(fd: fd)) else { return }
        }
    }

    private func readRequest(_ fd: Int32, _ leftover: inout [UInt8]) -> Request? {
        var buffer = leftover
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        func fill() -> Bool {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return false }
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        func findHeadEnd() -> Int? {
            guard buffer.count >= 4 else { return nil }
            return (0...(buffer.count - 4)).first { Array(buffer[$0..<$0 + 4]) == separator }
        }
        headEnd = findHeadEnd()
        while headEnd == nil {
            guard fill() else { return nil }
            headEnd = findHeadEnd()
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        var body = Array(buffer[(headEnd! + 4)...])
        while body.count < length {
            let before = buffer.count
            guard fill() else { return nil }
            body.append(contentsOf: buffer[before...])
        }
        leftover = Array(body.dropFirst(length))
        return Request(
            method: String(requestLine[0]), path: String(requestLine[1]), headers: headers,
            body: Array(body.prefix(length)))
    }
}
