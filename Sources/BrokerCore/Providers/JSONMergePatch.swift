import Foundation

/// JSONMergePatch applies a JSON merge patch (RFC 7396 §2): how a registration's `descriptor`
/// changes a catalogue entry. An object merges member by member, `null` removes a member, any
/// other value replaces what was there.
public enum JSONMergePatch {
    public static func apply(_ patch: Any, to target: Any?) -> Any? {
        guard let p = patch as? [String: Any] else { return patch is NSNull ? nil : patch }
        var out = target as? [String: Any] ?? [:]
        for (k, v) in p {
            if v is NSNull { out.removeValue(forKey: k) } else { out[k] = apply(v, to: out[k]) }
        }
        return out
    }
}
