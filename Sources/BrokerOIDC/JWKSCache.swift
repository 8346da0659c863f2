import BrokerCore
import Foundation
import Synchronization

/// JWKSCache fetches each issuer's JWK Set from the `jwks_uri` of its metadata (RFC 7517 §5)
/// and keeps it for `maxAge`. Keys the broker cannot use are skipped, not fatal. A re-fetch
/// asked for because a token names an unknown `kid` is rate-limited per issuer and per
/// RefetchBudget: a flood of forged logout tokens costs the IdP one request per 30 s and never
/// delays the re-fetch a refreshed ID token or a login's ID token signed with a new key needs.
///
/// Keys are kept per (issuer, trust), like the metadata they are found through: keys fetched
/// over a connection that trusted a client's own anchors are answered only to callers with the
/// same anchors. Fetches are single-flight per (issuer, trust) on this replica: concurrent misses
/// wait for the one fetch in progress and share its keys or its error, and so do concurrent
/// re-fetches (whose budgets already let at most one a budget through per interval).
///
/// Thread-safety: any thread; fetches run outside the locks, on the thread of the first caller.
public final class JWKSCache: KeySetSource {
    private struct Entry {
        var keys: [JSONWebKey]
        var fetchedAt: Date
        var lastRefetch: [RefetchBudget: Date] = [:]
    }

    private let http: BlockingHTTP
    private let directory: any IssuerDirectory
    private let maxAge: TimeInterval
    private let entries = Mutex<[ProviderKey: Entry]>([:])
    private let fetched = Mutex<[String: Int]>([:])
    /// Misses and re-fetches fly apart: a re-fetch must not be answered by a miss's flight that
    /// found the cached keys (the ones without the token's `kid`).
    private struct Flight: Hashable, Sendable {
        let key: ProviderKey
        let refetch: Bool
    }
    private let flights = BlockingSingleFlight<Flight, [JSONWebKey], TokenEndpointError>()

    /// JWK Set fetches by outcome (`ok`, `failed`): `tokenbroker_jwks_fetches_total`.
    public var fetches: [String: Int] { fetched.withLock { $0 } }

    public init(http: BlockingHTTP, directory: any IssuerDirectory, maxAge: TimeInterval = 3600) {
        self.http = http
        self.directory = directory
        self.maxAge = maxAge
    }

    public func keys(_ source: MetadataSource, trustAnchors: String?, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] {
        let key = ProviderKey(source, trustAnchors: trustAnchors)
        if let c = fresh(key, now: now) {
            guard let budget = refetch else { return c.keys }
            // Claim the budget's re-fetch before fetching, so that concurrent misses do not all go out.
            let claimed = entries.withLock { m -> Bool in
                if let last = m[key]?.lastRefetch[budget], now.timeIntervalSince(last) < budget.minimumInterval { return false }
                m[key]?.lastRefetch[budget] = now
                return true
            }
            guard claimed else { return c.keys }
            return try flights.run(Flight(key: key, refetch: true)) { () throws(TokenEndpointError) in
                try fetchAndKeep(key, now: now, refetch: budget)
            }
        }
        return try flights.run(Flight(key: key, refetch: false)) { () throws(TokenEndpointError) -> [JSONWebKey] in
            // A flight that ended just before this one began has filled the cache.
            if let c = fresh(key, now: now) { return c.keys }
            return try fetchAndKeep(key, now: now, refetch: refetch)
        }
    }

    private func fresh(_ key: ProviderKey, now: Date) -> Entry? {
        guard let c = entries.withLock({ $0[key] }), now.timeIntervalSince(c.fetchedAt) < maxAge else { return nil }
        return c
    }

    private func fetchAndKeep(_ key: ProviderKey, now: Date, refetch: RefetchBudget?) throws(TokenEndpointError) -> [JSONWebKey] {
        let keys: [JSONWebKey]
        do { keys = try fetch(key, now: now) } catch {
            fetched.withLock { $0["failed", default: 0] += 1 }
            throw error
        }
        fetched.withLock { $0["ok", default: 0] += 1 }
        entries.withLock { m in
            var e = Entry(keys: keys, fetchedAt: now, lastRefetch: m[key]?.lastRefetch ?? [:])
            if let budget = refetch { e.lastRefetch[budget] = now }
            m[key] = e
        }
        return keys
    }

    private func fetch(_ key: ProviderKey, now: Date) throws(TokenEndpointError) -> [JSONWebKey] {
        guard let uri = try directory.metadata(key.source, trustAnchors: key.trust.anchorsPEM, now: now).jwksURI else { throw .metadata("discovery: no jwks_uri") }
        let reply: BlockingHTTP.Reply
        do { reply = try http.send("GET", uri, headers: ["Accept: application/json"], trust: key.trust) } catch {
            switch error {
            case .notSent(let why), .unanswered(let why): throw .transient(reason: "jwks: \(why)", retryAfter: nil)
            case .certificateRefused(let why): throw .certificateRefused("jwks: \(why)")
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
