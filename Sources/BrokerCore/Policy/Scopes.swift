import Foundation

/// Scopes parses and prints OAuth scope strings (RFC 6749 §3.3: space-delimited, case-sensitive;
/// a provider's descriptor may say commas, as GitHub and Slack write them).
public enum Scopes {
    public static func parse(_ s: String?, separator: String = " ") -> [String] {
        guard let s else { return [] }
        var seen = Set<String>()
        let sep = separator.first ?? " "
        return s.split(separator: sep).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    public static func format(_ scopes: [String], separator: String = " ") -> String { scopes.joined(separator: separator) }
}
