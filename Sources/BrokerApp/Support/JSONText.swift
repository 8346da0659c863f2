/// JSONText writes JSON by hand on the hot path, where JSONEncoder's cost would dominate a
/// cached token hand-out (RFC 8259 §7 string escaping).
enum JSONText {
    static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }

    /// An object from already-encoded member values, in order.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    static func strings(_ items: [String]) -> String { array(items.map(quote)) }

    static func optional(_ s: String?) -> String { s.map(quote) ?? "null" }
}
