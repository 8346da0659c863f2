/// Scopes parses and prints OAuth scope strings (RFC 6749 §3.3: space-delimited, case-sensitive).
public enum Scopes {
    public static func parse(_ s: String?) -> [String] {
        guard let s else { return [] }
        var seen = Set<String>()
        return s.split(separator: " ").map(String.init).filter { seen.insert($0).inserted }
    }

    public static func format(_ scopes: [String]) -> String { scopes.joined(separator: " ") }
}
