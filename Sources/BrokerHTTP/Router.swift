/// Router matches method and path against patterns like `/v1/tenants/{t}/sessions/{id}/token`.
/// A segment is a literal (which may contain `:` as in `tokens:batch`) or a `{name}` capture of
/// one whole segment. Matching is exact: no prefixes, no trailing slashes.
///
/// Thread-safety: built once before the server starts, then read-only.
public struct Router: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPReply

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case capture(String)
    }

    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler
    }

    private var routes: [Route] = []

    public init() {}

    /// Every (method, pattern) registered, for the OpenAPI check.
    public var table: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = pattern.split(separator: "/").map { s -> Segment in
            s.hasPrefix("{") && s.hasSuffix("}") ? .capture(String(s.dropFirst().dropLast())) : .literal(String(s))
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    public enum Match {
        case found(Handler, [String: String])
        case methodNotAllowed([String])
        case notFound
    }

    public func match(method: String, path: String) -> Match {
        // Segment boundaries found by bytes once; literals compared by bytes, no allocation
        // until a route matches.
        let u = path.utf8
        guard u.first == UInt8(ascii: "/") else { return .notFound }
        var segments: [Substring.UTF8View] = []
        var start = u.index(after: u.startIndex)
        var i = start
        while i < u.endIndex {
            if u[i] == UInt8(ascii: "/") {
                segments.append(Substring(path)[start..<i].utf8)
                start = u.index(after: i)
            }
            i = u.index(after: i)
        }
        segments.append(Substring(path)[start..<u.endIndex].utf8)
        if path != "/" { for s in segments where s.isEmpty { return .notFound } }

        var allowed: [String] = []
        for r in routes where r.segments.count == segments.count {
            var ok = true
            for (seg, part) in zip(r.segments, segments) {
                if case .literal(let l) = seg, !l.utf8.elementsEqual(part) {
                    ok = false
                    break
                }
            }
            guard ok else { continue }
            guard r.method == method else {
                allowed.append(r.method)
                continue
            }
            var params: [String: String] = [:]
            for (seg, part) in zip(r.segments, segments) {
                if case .capture(let name) = seg { params[name] = String(Substring(part)) }
            }
            return .found(r.handler, params)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }
}
