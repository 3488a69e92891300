/// The system's secure generator behind a struct with a stored property: passing an empty
/// struct such as `SystemRandomNumberGenerator` `inout` crashes the thread sanitizer.
struct SecureRandom: RandomNumberGenerator {
    private var draws = 0

    mutating func next() -> UInt64 {
        draws &+= 1
        return UInt64.random(in: .min ... .max)
    }
}
