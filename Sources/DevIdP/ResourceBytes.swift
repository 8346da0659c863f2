/// ResourceBytes are the body of `GET /resource/bytes?n=N`: the first N bytes of one fixed
/// pseudo-random sequence, so that a client can check every byte it got. The sequence is the
/// 64-bit words SplitMix64 gives for 1, 2, 3, … (word k is `mix((k + 1) · 0x9E3779B97F4A7C15)`),
/// each little-endian.
enum ResourceBytes {
    static func word(_ k: UInt64) -> UInt64 {
        var z = (k &+ 1) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Fills `buffer` (its length a multiple of 8) with the sequence from byte `offset` (a multiple of 8).
    static func fill(_ buffer: UnsafeMutableRawBufferPointer, from offset: Int) {
        let first = UInt64(offset / 8)
        for i in 0..<(buffer.count / 8) {
            buffer.storeBytes(of: word(first + UInt64(i)).littleEndian, toByteOffset: i * 8, as: UInt64.self)
        }
    }
}
