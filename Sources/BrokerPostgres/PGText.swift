import Foundation

/// PGText converts between Swift values and PostgreSQL's text formats.
enum PGText {
    private static let digits = Array("0123456789abcdef".utf8)

    static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes bytea in hex output format (`\x0a1b…`).
    static func bytea(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count >= 2, u[0] == 92, u[1] == 120, u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity((u.count - 2) / 2)
        var i = 2
        while i < u.count {
            guard let hi = nibble(u[i]), let lo = nibble(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// A text[] literal: every element double-quoted, `"` and `\` escaped, nil as NULL.
    static func arrayLiteral(_ items: [String?]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(items.count * 24)
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard let item else {
                out += Array("NULL".utf8)
                continue
            }
            out.append(0x22)
            for b in item.utf8 {
                if b == 0x22 || b == 0x5c { out.append(0x5c) }
                out.append(b)
            }
            out.append(0x22)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    static func arrayLiteral(_ items: [String]) -> String { arrayLiteral(items.map { Optional($0) }) }
}
