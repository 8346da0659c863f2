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

    /// An upstream's base, filled and checked: what every call under it shares (parsed once).
    public struct Base: Sendable, Equatable {
        /// `scheme://authority` as the base wrote it.
        let root: String
        /// The base's path, percent-encoding kept, without its trailing slash.
        let path: String
        public let origin: String
        public let host: String
    }

    /// The URL for `tail` (the path after the proxy route's prefix, as the caller sent it,
    /// percent-encoding kept) and `query` (raw, without `?`), under `base` (a template) with
    /// `metadata` (the session's kept members, a JSON object's text).
    public static func resolve(base template: String, metadata: String?, tail: String, query: String?,
                               allowHTTP: Bool) -> Result<UpstreamURL, ProxyRefusal> {
        base(template, metadata: metadata, allowHTTP: allowHTTP).flatMap { resolve(under: $0, tail: tail, query: query) }
    }

    /// The base `template` with its `{member}`s filled from `metadata`, checked: an absolute
    /// https URL (http where allowed) without user info, query or fragment.
    public static func base(_ template: String, metadata: String?, allowHTTP: Bool) -> Result<Base, ProxyRefusal> {
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
        var path = c.percentEncodedPath
        if path.hasSuffix("/") { path.removeLast() }
        c.percentEncodedPath = ""
        guard let root = c.string else { return .failure(.noUpstream("the upstream's base URL is not an absolute URL")) }
        let origin = scheme + "://" + host + (c.port.map { ":\($0)" } ?? "")
        return .success(Base(root: root, path: path, origin: origin, host: host))
    }

    /// The URL for `tail` and `query` under a checked base: string work only.
    public static func resolve(under base: Base, tail: String, query: String?) -> Result<UpstreamURL, ProxyRefusal> {
        if let p = tailProblem(tail) { return .failure(.badPath(p)) }
        if let q = query, let p = queryProblem(q) { return .failure(.badPath(p)) }
        var path = base.path
        if !tail.isEmpty { path += "/" + tail }
        if path.isEmpty { path = "/" }
        let url = base.root + path + ((query?.isEmpty ?? true) ? "" : "?" + query!)
        return .success(UpstreamURL(url: url, origin: base.origin, host: base.host))
    }

    /// The origin of an absolute URL (`scheme://host[:port]`, lowercase, default ports left
    /// out), or nil.
    public static func origin(of url: String) -> String? {
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), let host = c.host?.lowercased(), !host.isEmpty else { return nil }
        let port = c.port.flatMap { (scheme == "https" && $0 == 443) || (scheme == "http" && $0 == 80) ? nil : $0 }
        return scheme + "://" + host + (port.map { ":\($0)" } ?? "")
    }

    /// Why a tail would leave the base, or nil. One pass over the bytes, each segment judged as
    /// it ends: `.`/`..` (plain or `%2e`-encoded, any case), encoded slashes, backslashes, NUL.
    static func tailProblem(_ tail: String) -> String? {
        let u = Array(tail.utf8)
        guard u.count <= 8192 else { return "longer than 8192 bytes" }
        if u.first == UInt8(ascii: "/") { return "an absolute path or URL is not a tail" }
        func lower(_ b: UInt8) -> UInt8 { (0x41...0x5A).contains(b) ? b | 0x20 : b }
        var segmentStart = 0, dots = 0, other = false, first = true
        var i = 0
        while i <= u.count {
            let b: UInt8 = i < u.count ? u[i] : UInt8(ascii: "/")
            if b <= 0x20 || b == 0x7F || b == 0x5C || b == 0x23 || b == 0x3F {
                if i < u.count { return "control characters, spaces, backslashes, '?' and '#' are refused in the path" }
            }
            if b == UInt8(ascii: "/") {
                if (dots == 1 || dots == 2) && !other { return "'.' and '..' segments are refused" }
                // `https://host/…` as a tail: a scheme (letters, digits, + . -) then ':' and an empty segment.
                if first, i > segmentStart, u[i - 1] == UInt8(ascii: ":"), i - 1 > segmentStart,
                   u[segmentStart..<(i - 1)].allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2B || $0 == 0x2E || $0 == 0x2D }) {
                    return "an absolute URL is not a tail"
                }
                first = false
                segmentStart = i + 1
                dots = 0
                other = false
                i += 1
                continue
            }
            if b == UInt8(ascii: "%"), i + 2 < u.count {
                let pair = (lower(u[i + 1]), lower(u[i + 2]))
                if pair == (0x32, 0x66) || pair == (0x35, 0x63) { return "encoded slashes are refused" }   // %2f, %5c
                if pair == (0x30, 0x30) { return "encoded NUL is refused" }                                // %00
                if pair == (0x32, 0x65) { dots += 1; i += 3; continue }                                    // %2e
            }
            if b == UInt8(ascii: ".") { dots += 1 } else { other = true }
            i += 1
        }
        return nil
    }

    static func queryProblem(_ q: String) -> String? {
        for b in q.utf8 where b <= 0x20 || b == 0x7F || b == 0x23 { return "control characters, spaces and '#' are refused in the query" }
        return nil
    }
}
