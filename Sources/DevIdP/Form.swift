/// Form decodes application/x-www-form-urlencoded bodies and query strings.
enum Form {
    static func decode(_ bytes: [UInt8]) -> [String: String] {
        var out: [String: String] = [:]
        for pair in bytes.split(separator: UInt8(ascii: "&")) {
            let kv = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = unescape(kv[0]) else { continue }
            out[k] = kv.count > 1 ? unescape(kv[1]) ?? "" : ""
        }
        return out
    }

    static func unescape<C: Collection>(_ s: C) -> String? where C.Element == UInt8 {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let c = it.next() {
            switch c {
            case UInt8(ascii: "+"): out.append(0x20)
            case UInt8(ascii: "%"):
                guard let h = it.next(), let l = it.next(), let v = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) else { return nil }
                out.append(v)
            default: out.append(c)
            }
        }
        return String(bytes: out, encoding: .utf8)
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            let c = Character(Unicode.Scalar(b))
            if c.isLetter && b < 128 || c.isNumber && b < 128 || "-._~".utf8.contains(b) { out.append(c) }
            else { out += "%" + (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true) }
        }
        return out
    }
}
