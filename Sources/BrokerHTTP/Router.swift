import Foundation

/// Router matches method and path against patterns like `/v1/tenants/{t}/sessions/{id}/token`.
/// A segment is a literal (which may contain `:` as in `tokens:batch`) or a `{name}` capture of
/// one whole segment. Matching is exact: no prefixes, no trailing slashes.
///
/// Thread-safety: built once before the server starts, then read-only.
public struct Router: Sendable {
    // Justified hand-written matching: routes are few and fixed; a path is cut at its slashes
    // once, only routes of that many segments are tried, each from its last segment (where
    // routes under one prefix differ), literals compared with memcmp.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPReply

    private enum Segment: Sendable, Equatable {
        case literal([UInt8])
        case capture(String)
    }

    /// A class: reading one while matching takes one reference, not one per field.
    private final class Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler
        /// How many segments are captures.
        let captures: Int

        init(method: String, pattern: String, segments: [Segment], handler: @escaping Handler) {
            self.method = method
            self.pattern = pattern
            self.segments = segments
            self.handler = handler
            captures = segments.reduce(0) { if case .capture = $1 { $0 + 1 } else { $0 } }
        }
    }

    private var routes: [Route] = []
    /// Streamed routes: literal and capture segments, then a tail capture of the rest.
    private struct StreamRoute: Sendable {
        let head: [Segment]
        let tail: String
        let maxBodyBytes: Int
        let index: Int
    }
    private var streams: [StreamRoute] = []
    /// Indexes into `routes` by segment count.
    private var bySegments: [[Int]] = []

    public init() {}

    /// Every (method, pattern) registered, for the OpenAPI check.
    public var table: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = pattern.split(separator: "/").map { s -> Segment in
            s.hasPrefix("{") && s.hasSuffix("}") ? .capture(String(s.dropFirst().dropLast())) : .literal(Array(s.utf8))
        }
        while bySegments.count <= segments.count { bySegments.append([]) }
        bySegments[segments.count].append(routes.count)
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    /// A streamed route, for ANY method: `pattern` ends with a tail capture (`{rest*}`) that
    /// takes the rest of the path, slashes included (possibly empty). The route is chosen on the
    /// request's headers alone and its handler runs then, with `bodyStream` (the body read as it
    /// arrives, bounded by `maxBodyBytes`: more is abandoned and answered 413), `allHeaders` and
    /// `rawTarget`; it answers with a `ResponseBodyPipe` response as soon as it can. Listed in
    /// `table` with the method "*". A server serves these only when given this router
    /// (`MHDServer(config:streams:handle:)`).
    public mutating func addStream(_ pattern: String, maxBodyBytes: Int, _ handler: @escaping Handler) {
        var parts = pattern.split(separator: "/").map(String.init)
        guard let last = parts.popLast(), last.hasPrefix("{"), last.hasSuffix("*}") else {
            preconditionFailure("a streamed route's pattern ends with a tail capture such as {rest*}")
        }
        let head = parts.map { s -> Segment in
            s.hasPrefix("{") && s.hasSuffix("}") ? .capture(String(s.dropFirst().dropLast())) : .literal(Array(s.utf8))
        }
        streams.append(StreamRoute(head: head, tail: String(last.dropFirst().dropLast(2)), maxBodyBytes: maxBodyBytes, index: routes.count))
        routes.append(Route(method: "*", pattern: pattern, segments: head + [.capture(String(last.dropFirst().dropLast(2)))], handler: handler))
    }

    /// True when some route is streamed.
    public var hasStreams: Bool { !streams.isEmpty }

    /// The streamed route of `path`: its handler, captures (the tail included), body limit and index in `table`.
    public func stream(path: String) -> (handler: Handler, parameters: RouteParameters, maxBodyBytes: Int, route: Int)? {
        guard !streams.isEmpty, path.utf8.first == UInt8(ascii: "/") else { return nil }
        // Every request asks (the server, then the router): most are no streamed route's, and
        // are told so by bytes, before anything is split or allocated.
        var bytes = path
        guard bytes.withUTF8({ u in streams.contains { Self.mayMatch($0.head, u) } }) else { return nil }
        let parts = path.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        for s in streams where parts.count >= s.head.count {
            var params = RouteParameters(capacity: s.head.count + 1)
            var ok = true
            for (k, seg) in s.head.enumerated() {
                switch seg {
                case .literal(let l): ok = ok && l.elementsEqual(parts[k])
                case .capture(let name):
                    ok = ok && !parts[k].isEmpty
                    params.append(name, String(decoding: parts[k], as: UTF8.self))
                }
                if !ok { break }
            }
            guard ok else { continue }
            let rest = parts.dropFirst(s.head.count).map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
            params.append(s.tail, rest)
            return (routes[s.index].handler, params, s.maxBodyBytes, s.index)
        }
        return nil
    }

    /// False when the path's first segments cannot be `head`'s (a literal differs, a capture is
    /// empty, or the path is shorter); true when they may be.
    private static func mayMatch(_ head: [Segment], _ u: UnsafeBufferPointer<UInt8>) -> Bool {
        var at = 1
        for seg in head {
            guard at <= u.count else { return false }
            var end = at
            while end < u.count, u[end] != UInt8(ascii: "/") { end += 1 }
            switch seg {
            case .literal(let l):
                guard l.count == end - at, l.withUnsafeBufferPointer({ memcmp($0.baseAddress!, u.baseAddress! + at, l.count) }) == 0 else { return false }
            case .capture:
                guard end > at else { return false }
            }
            at = end + 1
        }
        return true
    }

    public enum Match {
        /// The handler, the captures, and the route's index in `table` (per-route metrics).
        case found(Handler, RouteParameters, route: Int)
        case methodNotAllowed([String])
        case notFound
    }

    public func match(method: String, path: String) -> Match {
        if let s = stream(path: path) { return .found(s.handler, s.parameters, route: s.route) }
        var path = path
        return path.withUTF8 { u -> Match in
            // Segment boundaries found once by bytes; literals compared by bytes; nothing is
            // allocated for a route until it matches.
            guard u.first == UInt8(ascii: "/") else { return .notFound }
            let most = bySegments.count - 1
            guard most > 0 else { return .notFound }
            return withUnsafeTemporaryAllocation(of: Int.self, capacity: most + 1) { cuts -> Match in
                // cuts[k] is the slash before segment k; cuts[count] the end of the path.
                cuts[0] = 0
                var count = 0
                // memchr jumps from slash to slash: a byte loop cost ten instructions a byte of
                // the path, a twentieth of a cached hand-out (callgrind).
                let base = u.baseAddress!
                var at = 1
                while at < u.count, let slash = memchr(base + at, Int32(UInt8(ascii: "/")), u.count - at) {
                    count += 1
                    guard count < most else { return .notFound }   // more segments than any route has
                    let i = UnsafeRawPointer(slash) - UnsafeRawPointer(base)
                    cuts[count] = i
                    at = i + 1
                }
                count += 1
                cuts[count] = u.count
                if u.count > 1 { for k in 0..<count where cuts[k + 1] - cuts[k] <= 1 { return .notFound } }
                return match(method, u, cuts, count)
            }
        }
    }

    /// The route for a path cut into `count` segments (at most the longest route's, by the caller).
    private func match(_ method: String, _ u: UnsafeBufferPointer<UInt8>, _ cuts: UnsafeMutableBufferPointer<Int>, _ count: Int) -> Match {
        func segment(_ k: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: u[(cuts[k] + 1)..<cuts[k + 1]]) }
        var allowed: [String] = []
        for index in bySegments[count] {
            let r = routes[index]
            var ok = true
            for k in r.segments.indices.reversed() {
                guard case .literal(let l) = r.segments[k] else { continue }
                let s = segment(k)
                if l.count != s.count || (!l.isEmpty && l.withUnsafeBufferPointer({ memcmp($0.baseAddress!, s.baseAddress!, s.count) }) != 0) {
                    ok = false
                    break
                }
            }
            guard ok else { continue }
            guard r.method == method else {
                allowed.append(r.method)
                continue
            }
            var params = RouteParameters(capacity: r.captures)
            for (k, seg) in r.segments.enumerated() {
                if case .capture(let name) = seg { params.append(name, String(decoding: segment(k), as: UTF8.self)) }
            }
            return .found(r.handler, params, route: index)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }
}
