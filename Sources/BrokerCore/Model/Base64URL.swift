/// Base64URL is the unpadded URL-safe alphabet of RFC 4648 §5, used by JOSE and our ids.
/// Byte-level on purpose: every ID token's three parts pass through here, and Foundation's
/// string replacing cost more than the signature check.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let values: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    public static func encode<B: Collection>(_ bytes: B) -> String where B.Element == UInt8 {
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= input.count {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        let rest = input.count - i
        if rest > 0 {
            let n = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
            if rest == 2 { out.append(alphabet[Int(n >> 6 & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil for anything but unpadded base64url (padding, other alphabets, impossible lengths).
    public static func decode(_ s: String) -> [UInt8]? {
        var s = s
        return s.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }

    public static func decode(_ chars: UnsafeRawBufferPointer) -> [UInt8]? {
        guard chars.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0, bits = 0
        for c in chars {
            let v = values[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero (RFC 4648 §3.5: canonical encoding).
        guard acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
