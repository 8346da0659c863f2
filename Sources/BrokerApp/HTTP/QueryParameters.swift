import BrokerCore
import BrokerHTTP
import Foundation

/// QueryParameters reads a request's query string with the same rules as JSON bodies: an
/// unknown parameter, a repeated one or a value of the wrong form is 400 `invalid_request`
/// naming it, so a typo in a filter never silently widens a listing or a sign-out.
struct QueryParameters {
    private let values: [String: String]

    init(_ req: HTTPRequest, allowed: Set<String>) throws {
        var v: [String: String] = [:]
        for (name, value) in req.query {
            guard allowed.contains(name) else { throw Self.bad("unknown query parameter '\(name)'") }
            guard v.updateValue(value, forKey: name) == nil else { throw Self.bad("'\(name)' appears more than once") }
        }
        values = v
    }

    static func bad(_ m: String) -> BrokerError { .badRequest(code: "invalid_request", message: m) }

    func string(_ name: String) throws -> String? {
        guard let v = values[name] else { return nil }
        guard !v.isEmpty, v.utf8.count <= 512 else { throw Self.bad("'\(name)' must be 1...512 bytes") }
        return v
    }

    func time(_ name: String) throws -> Date? {
        guard let v = values[name] else { return nil }
        guard let d = RFC3339.parse(v) else { throw Self.bad("'\(name)' must be an RFC 3339 time") }
        return d
    }

    func limit(default d: Int = 100, max: Int = 1000) throws -> Int {
        guard let v = values["limit"] else { return d }
        guard let n = Int(v), (1...max).contains(n) else { throw Self.bad("'limit' must be 1...\(max)") }
        return n
    }

    func bool(_ name: String, default d: Bool = false) throws -> Bool {
        guard let v = values[name] else { return d }
        guard v == "true" || v == "false" else { throw Self.bad("'\(name)' must be true or false") }
        return v == "true"
    }
}
