/// FormEncoding writes application/x-www-form-urlencoded bodies and query strings (HTML 4.01
/// §17.13.4.1, as RFC 6749 §2.3.1, §4.1.1 and Appendix B require for token requests, client
/// credentials and authorization requests).
public enum FormEncoding {
    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._*".utf8)

    public static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            if unreserved.contains(b) { out.unicodeScalars.append(Unicode.Scalar(b)) }
            else if b == 0x20 { out += "+" }
            else { out += "%" + String(b, radix: 16, uppercase: true).leftPad2 }
        }
        return out
    }

    public static func body(_ fields: [(String, String)]) -> String {
        fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    /// The pairs of a form body or query string, in order; nil when an escape is malformed or
    /// a name or value is not UTF-8.
    public static func pairs(_ bytes: [UInt8]) -> [(String, String)]? {
        var out: [(String, String)] = []
        for pair in bytes.split(separator: UInt8(ascii: "&")) {
            let kv = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = unescape(kv[0]), let v = kv.count > 1 ? unescape(kv[1]) : "" else { return nil }
            out.append((k, v))
        }
        return out
    }

    /// The form as a dictionary (a repeated name keeps its last value; malformed pairs are skipped).
    public static func decode(_ bytes: [UInt8]) -> [String: String] {
        var out: [String: String] = [:]
        for pair in bytes.split(separator: UInt8(ascii: "&")) {
            let kv = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = unescape(kv[0]) else { continue }
            out[k] = kv.count > 1 ? unescape(kv[1]) ?? "" : ""
        }
        return out
    }

    /// Percent-decoding with `+` as a space; nil when malformed or not UTF-8.
    public static func unescape<C: Collection>(_ s: C) -> String? where C.Element == UInt8 {
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
}

private extension String {
    var leftPad2: String { count < 2 ? "0" + self : self }
}
