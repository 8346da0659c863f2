/// JSONText writes JSON by hand on the hot path, where JSONEncoder's cost would dominate a
/// cached token hand-out (RFC 8259 §7 string escaping).
enum JSONText {
    static func quote(_ s: String) -> String {
        var s = s
        let clean = s.withUTF8 { u in !u.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c } }
        if clean { return "\"" + s + "\"" }
        var out = [UInt8]()
        out.reserveCapacity(s.utf8.count + 16)
        out.append(0x22)
        for b in s.utf8 {
            switch b {
            case 0x22: out += [0x5c, 0x22]
            case 0x5c: out += [0x5c, 0x5c]
            case 0x0a: out += [0x5c, UInt8(ascii: "n")]
            case 0x0d: out += [0x5c, UInt8(ascii: "r")]
            case 0x09: out += [0x5c, UInt8(ascii: "t")]
            case 0..<0x20: out += Array("\\u00".utf8) + [hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(0x22)
        return String(decoding: out, as: UTF8.self)
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// An object from already-encoded member values, in order.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    static func strings(_ items: [String]) -> String { array(items.map(quote)) }

    static func optional(_ s: String?) -> String { s.map(quote) ?? "null" }
}
