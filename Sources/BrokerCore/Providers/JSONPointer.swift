import Foundation

/// JSONPointer is an RFC 6901 pointer into a parsed JSON document (`/authed_user/access_token`):
/// how a provider descriptor says where a value is in an answer that is not shaped as RFC 6749
/// says. The empty pointer is the whole document; `~1` is `/` and `~0` is `~` (§4).
public struct JSONPointer: Sendable, Equatable, CustomStringConvertible {
    public let tokens: [String]

    /// Nil when `text` is neither empty nor starts with `/`, or has a `~` not followed by 0 or 1.
    public init?(_ text: String) {
        if text.isEmpty { tokens = []; return }
        guard text.hasPrefix("/") else { return nil }
        var out: [String] = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = "", escaped = false
            for c in raw {
                if escaped {
                    guard c == "0" || c == "1" else { return nil }
                    token.append(c == "0" ? "~" : "/")
                    escaped = false
                } else if c == "~" { escaped = true } else { token.append(c) }
            }
            if escaped { return nil }
            out.append(token)
        }
        tokens = out
    }

    public var description: String {
        tokens.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }.joined()
    }

    /// The value the pointer names in `document` (objects by member, arrays by decimal index),
    /// or nil when there is none. JSON null is no value.
    public func value(in document: Any) -> Any? {
        var here: Any = document
        for t in tokens {
            if let o = here as? [String: Any], let next = o[t] { here = next }
            else if let a = here as? [Any], let i = Int(t), t == String(i), a.indices.contains(i) { here = a[i] }
            else { return nil }
        }
        return here is NSNull ? nil : here
    }

    /// The value as text: a string as it is, a number in decimal (GitHub's numeric user ids), a
    /// boolean as `true`/`false`; nil for anything else.
    public func text(in document: Any) -> String? {
        switch value(in: document) {
        case let s as String: return s
        case let n as NSNumber:
            if JSONPointer.isBoolean(n) { return n.boolValue ? "true" : "false" }
            if n.doubleValue == n.doubleValue.rounded(), abs(n.doubleValue) < 1e15 { return String(n.int64Value) }
            return n.stringValue
        default: return nil
        }
    }

    /// The value as a boolean, only when it is JSON `true` or `false` (not a number).
    public func bool(in document: Any) -> Bool? {
        guard let n = value(in: document) as? NSNumber, Self.isBoolean(n) else { return nil }
        return n.boolValue
    }

    /// JSON booleans parse to NSNumbers of Objective-C type `c` (char), numbers never do.
    static func isBoolean(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }
}
