/// Router matches method and path against patterns like `/v1/tenants/{t}/sessions/{id}/token`.
/// A segment is a literal (which may contain `:` as in `tokens:batch`) or a `{name}` capture of
/// one whole segment. Matching is exact: no prefixes, no trailing slashes.
///
/// Thread-safety: built once before the server starts, then read-only.
public struct Router: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPReply

    private enum Segment: Sendable, Equatable {
        case literal([UInt8])
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
            s.hasPrefix("{") && s.hasSuffix("}") ? .capture(String(s.dropFirst().dropLast())) : .literal(Array(s.utf8))
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    public enum Match {
        /// The handler, the captures, and the route's index in `table` (per-route metrics).
        case found(Handler, [String: String], route: Int)
        case methodNotAllowed([String])
        case notFound
    }

    public func match(method: String, path: String) -> Match {
        var path = path
        return path.withUTF8 { u -> Match in
            // Segment boundaries found once by bytes; literals compared by bytes; nothing is
            // allocated for a route until it matches.
            guard u.first == UInt8(ascii: "/") else { return .notFound }
            var cuts: [Int] = [0]
            cuts.reserveCapacity(8)
            for i in 1..<u.count where u[i] == UInt8(ascii: "/") { cuts.append(i) }
            cuts.append(u.count)
            let count = cuts.count - 1
            if u.count > 1 { for k in 0..<count where cuts[k + 1] - cuts[k] <= 1 { return .notFound } }
            func segment(_ k: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: u[(cuts[k] + 1)..<cuts[k + 1]]) }

            var allowed: [String] = []
            for (index, r) in routes.enumerated() where r.segments.count == count {
                var ok = true
                for (k, seg) in r.segments.enumerated() {
                    if case .literal(let l) = seg, !l.elementsEqual(segment(k)) {
                        ok = false
                        break
                    }
                }
                guard ok else { continue }
                guard r.method == method else {
                    allowed.append(r.method)
                    continue
                }
                var params = [String: String](minimumCapacity: r.segments.count)   // no regrowth while filled
                for (k, seg) in r.segments.enumerated() {
                    if case .capture(let name) = seg { params[name] = String(decoding: segment(k), as: UTF8.self) }
                }
                return .found(r.handler, params, route: index)
            }
            return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
        }
    }
}
