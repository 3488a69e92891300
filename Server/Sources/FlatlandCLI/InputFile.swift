import ArgumentParser

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file (or standard input, `-`) read in fixed-size chunks: constant memory at any size.
struct InputFile: ~Copyable {
    /// The largest `--chunk-size` a command accepts: one chunk is allocated whole.
    static let maxChunkSize = 64 << 20

    /// Checks a `--chunk-size` option: from 1 byte to ``maxChunkSize``, else a usage error
    /// (exit 2).
    static func validate(chunkSize: Int) throws(ValidationError) {
        guard chunkSize >= 1, chunkSize <= maxChunkSize else {
            throw ValidationError(
                "--chunk-size must be between 1 and \(maxChunkSize) bytes (64 MiB), not \(chunkSize)")
        }
    }

    let path: String
    private let fd: Int32

    init(path: String) throws(CLIFailure) {
        self.path = path
        if path == "-" {
            fd = 0
            return
        }
        let opened = open(path, O_RDONLY)
        guard opened >= 0 else {
            throw .usage("\(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        if fstat(opened, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(opened)
            throw .usage("\(path): is a directory")
        }
        fd = opened
    }

    deinit {
        if fd > 0 { close(fd) }
    }

    /// Calls `body` with each chunk of at most `chunkSize` bytes, in order.
    func forEachChunk(size chunkSize: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            var filled = 0
            // Fill the whole chunk (pipes deliver less per read) so chunk sizes mean what they say.
            while filled < chunkSize {
                let n = read(fd, buffer.baseAddress! + filled, chunkSize - filled)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CLIFailure.usage("\(path): \(String(cString: strerror(errno)))")
                }
                if n == 0 { break }
                filled += n
            }
            if filled == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<filled]))
            if filled < chunkSize { return }
        }
    }
}

/// Seconds on a monotonic clock.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
