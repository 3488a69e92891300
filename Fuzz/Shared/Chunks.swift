// Shared by the fuzz harnesses (scripts/fuzz.sh compiles it into each).

/// Chunk sizes from a seed: a small linear congruential generator, sizes 1 ... maxSize.
func fuzzChunkSizes(total: Int, seed: UInt8, maxSize: UInt8) -> [Int] {
    var state = UInt32(seed) &* 2_654_435_761 &+ 1
    let top = Int(maxSize % 64) + 1
    var sizes: [Int] = []
    var covered = 0
    while covered < total {
        state = state &* 1_103_515_245 &+ 12345
        let size = Int((state >> 16) % UInt32(top)) + 1
        sizes.append(size)
        covered += size
    }
    return sizes
}

/// Feeds `text` to `feed` whole (`chunks` nil) or in pieces of the given sizes.
func fuzzFeed<Failure: Error>(
    _ text: UnsafeRawBufferPointer, chunks: [Int]?, _ feed: (UnsafeRawBufferPointer) throws(Failure) -> Void
) throws(Failure) {
    guard let chunks else { return try feed(text) }
    var start = 0
    for size in chunks where start < text.count {
        let end = min(text.count, start + size)
        try feed(UnsafeRawBufferPointer(rebasing: text[start..<end]))
        start = end
    }
}
