import BrokerCore
import Foundation
import Synchronization

/// JWKSCache fetches each issuer's JWK Set from the `jwks_uri` of its metadata (RFC 7517 §5)
/// and keeps it for `maxAge`. Keys the broker cannot use are skipped, not fatal. A re-fetch
/// asked for because a token names an unknown `kid` happens at most once per
/// `minRefetchInterval` per issuer: a flood of tokens with forged kids costs the IdP one
/// request per interval, and a genuine rotation is picked up on the first miss.
///
/// Thread-safety: any thread; fetches run outside the lock (two racing misses may both fetch).
public final class JWKSCache: KeySetSource {
    private struct Entry {
        var keys: [JSONWebKey]
        var fetchedAt: Date
        var lastRefetch: Date?
    }

    private let http: BlockingHTTP
    private let directory: any IssuerDirectory
    private let maxAge: TimeInterval
    private let minRefetchInterval: TimeInterval
    private let entries = Mutex<[String: Entry]>([:])

    public init(http: BlockingHTTP, directory: any IssuerDirectory, maxAge: TimeInterval = 3600, minRefetchInterval: TimeInterval = 30) {
        self.http = http
        self.directory = directory
        self.maxAge = maxAge
        self.minRefetchInterval = minRefetchInterval
    }

    public func keys(issuer: String, now: Date, refetch: Bool) throws(TokenEndpointError) -> [JSONWebKey] {
        let cached = entries.withLock { $0[issuer] }
        if let c = cached, now.timeIntervalSince(c.fetchedAt) < maxAge {
            guard refetch else { return c.keys }
            if let last = c.lastRefetch, now.timeIntervalSince(last) < minRefetchInterval { return c.keys }
            // Claim the re-fetch before fetching, so that concurrent misses do not all go out.
            let claimed = entries.withLock { m -> Bool in
                if let last = m[issuer]?.lastRefetch, now.timeIntervalSince(last) < minRefetchInterval { return false }
                m[issuer]?.lastRefetch = now
                return true
            }
            guard claimed else { return c.keys }
        }
        let keys = try fetch(issuer: issuer, now: now)
        entries.withLock { m in
            m[issuer] = Entry(keys: keys, fetchedAt: now, lastRefetch: refetch ? now : m[issuer]?.lastRefetch)
        }
        return keys
    }

    private func fetch(issuer: String, now: Date) throws(TokenEndpointError) -> [JSONWebKey] {
        guard let uri = try directory.metadata(issuer: issuer, now: now).jwksURI else { throw .metadata("discovery: no jwks_uri") }
        let reply: BlockingHTTP.Reply
        do { reply = try http.send("GET", uri, headers: ["Accept: application/json"]) } catch {
            switch error {
            case .notSent(let why), .unanswered(let why): throw .transient(reason: "jwks: \(why)", retryAfter: nil)
            case .tooLarge: throw .metadata("jwks: document too large")
            }
        }
        if reply.status >= 500 || reply.status == 429 { throw .transient(reason: "jwks: HTTP \(reply.status)", retryAfter: reply.retryAfter) }
        guard reply.status == 200, let doc = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
              let list = doc["keys"] as? [[String: Any]] else {
            throw .metadata("jwks: no JWK Set (HTTP \(reply.status))")
        }
        return list.compactMap(JSONWebKey.init(json:))
    }
}
