#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C library's calls the tool makes, named once for every platform: inside a command,
/// `exit` and `write` name ArgumentParser's and the command's own, and `Glibc.exit` does not
/// exist on Darwin.
enum LibC {
    /// Ends the process with `code`.
    static func exit(_ code: Int32) -> Never {
        #if canImport(Glibc)
            Glibc.exit(code)
        #elseif canImport(Musl)
            Musl.exit(code)
        #else
            Darwin.exit(code)
        #endif
    }

    /// `write(2)`: the bytes written, or -1.
    static func write(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.write(descriptor, bytes, count)
        #elseif canImport(Musl)
            Musl.write(descriptor, bytes, count)
        #else
            Darwin.write(descriptor, bytes, count)
        #endif
    }
}
