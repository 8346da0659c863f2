import Foundation

/// JSONWriter appends JSON to a byte buffer (RFC 8259 §7 string escaping). The token path
/// renders through it because building Strings and joining them cost more than the rest of a
/// cached hand-out.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma = false
    private static let hex = Array("0123456789abcdef".utf8)

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }

    mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    /// A member whose key is a runtime string and whose value is already-encoded JSON.
    mutating func member(_ key: String, json: String) {
        string(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
        raw(json)
    }

    mutating func key(_ k: StaticString) {
        separate()
        bytes.append(0x22)
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [0x22, UInt8(ascii: ":")])
        needsComma = false
    }

    mutating func string(_ k: StaticString, _ v: String) { key(k); string(v) }
    mutating func int(_ k: StaticString, _ v: Int) { key(k); raw(String(v)) }

    mutating func time(_ k: StaticString, _ d: Date, millis: Bool = false) {
        key(k)
        RFC3339.write(d, into: &bytes, millis: millis)
        needsComma = true
    }

    mutating func string(_ v: String) {
        separate()
        bytes.append(0x22)
        var v = v
        v.withUTF8 { u in
            // Most strings need no escaping: copy them whole.
            if !Self.needsEscaping(u) {
                bytes.append(contentsOf: u)
                return
            }
            for b in u {
                switch b {
                case 0x22: bytes += [0x5c, 0x22]
                case 0x5c: bytes += [0x5c, 0x5c]
                case 0x0a: bytes += [0x5c, UInt8(ascii: "n")]
                case 0x0d: bytes += [0x5c, UInt8(ascii: "r")]
                case 0x09: bytes += [0x5c, UInt8(ascii: "t")]
                case 0..<0x20: bytes += [0x5c, UInt8(ascii: "u"), 0x30, 0x30, Self.hex[Int(b >> 4)], Self.hex[Int(b & 15)]]
                default: bytes.append(b)
                }
            }
        }
        bytes.append(0x22)
        needsComma = true
    }

    /// Whether any byte is a control character, '"' or '\\' — eight bytes at a time (a token is
    /// hundreds of bytes, read on every hand-out). The per-byte tests are the classic
    /// "has a zero byte" and "has a byte less than n" word tricks; a borrow can only mark bytes
    /// above one that truly matched, so the answer is exact.
    static func needsEscaping(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let raw = UnsafeRawBufferPointer(u)
        var i = 0
        while i + 8 <= raw.count {
            let v = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let quote = v ^ (ones &* 0x22), backslash = v ^ (ones &* 0x5c)
            let control = (v &- ones &* 0x20) & ~v
            if (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highs != 0 { return true }
            i += 8
        }
        while i < raw.count {
            let b = raw[i]
            if b < 0x20 || b == 0x22 || b == 0x5c { return true }
            i += 1
        }
        return false
    }

    /// Appends members already encoded by another writer (`"a":1,"b":2`).
    mutating func members(_ encoded: [UInt8]) {
        separate()
        bytes.append(contentsOf: encoded)
        needsComma = true
    }

    /// Appends already-encoded JSON.
    mutating func raw(_ json: String) {
        separate()
        bytes.append(contentsOf: json.utf8)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
