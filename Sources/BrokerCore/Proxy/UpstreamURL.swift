import Foundation

/// UpstreamURL makes the URL a proxied request goes to: the upstream's base (its `{member}`s
/// filled from the session's metadata) with the caller's path under it and the caller's query.
/// The result always stays on the base's origin and under its path: a tail with `..` or `.`
/// segments (plain or percent-encoded), an encoded slash or backslash, or an absolute URL is
/// refused, never normalised into something else.
public struct UpstreamURL: Sendable, Equatable {
    /// The absolute URL to send to.
    public let url: String
    /// `scheme://host[:port]`, lowercase: what the request may reach.
    public let origin: String
    /// The host alone (for rate limits, metrics and messages).
    public let host: String

    /// The base with `{member}`s replaced by `value(member)`; nil when one has no value.
    public static func fill(_ template: String, value: (String) -> String?) -> String? {
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { return nil }
            guard let v = value(String(rest[rest.index(after: open)..<close])) else { return nil }
            out += v
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// The URL for `tail` (the path after the proxy route's prefix, as the caller sent it,
    /// percent-encoding kept) and `query` (raw, without `?`), under `base` (a template) with
    /// `metadata` (the session's kept members, a JSON object's text).
    public static func resolve(base template: String, metadata: String?, tail: String, query: String?,
                               allowHTTP: Bool) -> Result<UpstreamURL, ProxyRefusal> {
        let members = metadata.flatMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] } ?? [:]
        var missing: String?
        let filled = fill(template) { name in
            if let s = members[name] as? String, !s.isEmpty, !s.contains(where: { $0.isWhitespace || $0 == "?" || $0 == "#" || $0 == "@" }) { return s }
            missing = name
            return nil
        }
        guard let base = filled else { return .failure(.noUpstream("the session has no '\(missing ?? "?")' for the upstream's base URL")) }
        guard var c = URLComponents(string: base), let scheme = c.scheme?.lowercased(), let host = c.host?.lowercased(), !host.isEmpty,
              c.user == nil, c.password == nil, c.query == nil, c.fragment == nil else {
            return .failure(.noUpstream("the upstream's base URL is not an absolute URL"))
        }
        guard scheme == "https" || (scheme == "http" && allowHTTP) else { return .failure(.noUpstream("the upstream's base URL must be https")) }
        if let p = tailProblem(tail) { return .failure(.badPath(p)) }
        if let q = query, let p = queryProblem(q) { return .failure(.badPath(p)) }
        var path = c.percentEncodedPath
        if path.hasSuffix("/") { path.removeLast() }
        if !tail.isEmpty { path += "/" + tail }
        if path.isEmpty { path = "/" }
        c.percentEncodedPath = path
        c.percentEncodedQuery = (query?.isEmpty ?? true) ? nil : query
        guard let url = c.string else { return .failure(.badPath("not a valid URL")) }
        let origin = scheme + "://" + host + (c.port.map { ":\($0)" } ?? "")
        return .success(UpstreamURL(url: url, origin: origin, host: host))
    }

    /// The origin of an absolute URL (`scheme://host[:port]`, lowercase, default ports left
    /// out), or nil.
    public static func origin(of url: String) -> String? {
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), let host = c.host?.lowercased(), !host.isEmpty else { return nil }
        let port = c.port.flatMap { (scheme == "https" && $0 == 443) || (scheme == "http" && $0 == 80) ? nil : $0 }
        return scheme + "://" + host + (port.map { ":\($0)" } ?? "")
    }

    /// Why a tail would leave the base, or nil.
    static func tailProblem(_ tail: String) -> String? {
        guard tail.utf8.count <= 8192 else { return "longer than 8192 bytes" }
        if tail.hasPrefix("/") { return "an absolute path or URL is not a tail" }
        for b in tail.utf8 where b <= 0x20 || b == 0x7F || b == 0x5C || b == 0x23 || b == 0x3F { return "control characters, spaces, backslashes, '?' and '#' are refused in the path" }
        let lower = tail.lowercased()
        if lower.contains("%2f") || lower.contains("%5c") { return "encoded slashes are refused" }
        if lower.contains("%00") { return "encoded NUL is refused" }
        for segment in lower.split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = segment.replacingOccurrences(of: "%2e", with: ".")
            if decoded == "." || decoded == ".." { return "'.' and '..' segments are refused" }
        }
        // `https://host/…` as a tail: a scheme then an empty segment.
        if let first = lower.split(separator: "/", omittingEmptySubsequences: false).first, first.hasSuffix(":"),
           first.dropLast().allSatisfy({ $0.isLetter || $0.isNumber || "+.-".contains($0) }) { return "an absolute URL is not a tail" }
        return nil
    }

    static func queryProblem(_ q: String) -> String? {
        for b in q.utf8 where b <= 0x20 || b == 0x7F || b == 0x23 { return "control characters, spaces and '#' are refused in the query" }
        return nil
    }
}
