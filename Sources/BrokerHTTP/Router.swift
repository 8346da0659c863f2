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
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard path.hasPrefix("/"), !parts.contains(where: \.isEmpty) || path == "/" else { return .notFound }
        var allowed: [String] = []
        for r in routes where r.segments.count == parts.count {
            var params: [String: String] = [:]
            var ok = true
            for (seg, part) in zip(r.segments, parts) {
                switch seg {
                case .literal(let l): ok = l == part
                case .capture(let name): params[name] = String(part)
                }
                if !ok { break }
            }
            guard ok else { continue }
            if r.method == method { return .found(r.handler, params) }
            allowed.append(r.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }
}
