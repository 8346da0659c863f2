/// JSONText builds small JSON documents as Strings (logs, metadata documents); escaping is
/// JSONWriter's, the one implementation of RFC 8259 §7.
enum JSONText {
    static func quote(_ s: String) -> String {
        var w = JSONWriter(capacity: s.utf8.count + 2)
        w.string(s)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// An object from already-encoded member values, in order.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    static func array(_ items: [String]) -> String { "[" + items.joined(separator: ",") + "]" }

    static func strings(_ items: [String]) -> String { array(items.map(quote)) }

    static func optional(_ s: String?) -> String { s.map(quote) ?? "null" }
}
