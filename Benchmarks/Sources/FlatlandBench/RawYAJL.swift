import CBenchYAJL

/// libyajl with callbacks that do nothing (numbers as text): the floor of any yajl design.
enum RawYAJL {
    nonisolated(unsafe) private static let callbacks: UnsafeMutablePointer<yajl_callbacks> = {
        let table = UnsafeMutablePointer<yajl_callbacks>.allocate(capacity: 1)
        table.initialize(
            to: yajl_callbacks(
                yajl_null: { _ in 1 }, yajl_boolean: { _, _ in 1 }, yajl_integer: nil, yajl_double: nil,
                yajl_number: { _, _, _ in 1 }, yajl_string: { _, _, _ in 1 }, yajl_start_map: { _ in 1 },
                yajl_map_key: { _, _, _ in 1 }, yajl_end_map: { _ in 1 }, yajl_start_array: { _ in 1 },
                yajl_end_array: { _ in 1 }))
        return table
    }()

    /// Parses `bytes` in `chunkSize` chunks; returns whether the text was valid. With
    /// `validatesUTF8` false, yajl's own UTF-8 check of strings is off (`yajl_dont_validate_strings`),
    /// as in FlatlandJSON's parse, which validates in a pass of its own.
    static func parse(_ bytes: UnsafeRawBufferPointer, chunkSize: Int, validatesUTF8: Bool = true) -> Bool {
        guard let handle = yajl_alloc(callbacks, nil, nil) else { return false }
        defer { yajl_free(handle) }
        if !validatesUTF8 { _ = flatland_bench_yajl_config(handle, yajl_dont_validate_strings, 1) }
        let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var offset = 0
        while offset < bytes.count {
            let n = min(chunkSize, bytes.count - offset)
            if yajl_parse(handle, base + offset, n) != yajl_status_ok { return false }
            offset += n
        }
        return yajl_complete_parse(handle) == yajl_status_ok
    }
}
