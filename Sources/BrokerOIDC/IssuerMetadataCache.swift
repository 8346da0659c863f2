import BrokerCore
import Foundation
import Synchronization

/// IssuerMetadataCache fetches a provider's metadata — `<issuer>/.well-known/openid-configuration`
/// (OpenID Connect Discovery 1.0 §4), or RFC 8414's `/.well-known/oauth-authorization-server`
/// inserted before the issuer's path (§3.1) — and keeps it for `maxAge`. The document's
/// `issuer` must equal the configured issuer exactly (Discovery §4.3, RFC 8414 §3.3; or the
/// descriptor's issuer template, character for character), or the client is unusable:
/// endpoints are always taken from metadata or the descriptor, never guessed.
///
/// Documents are kept per (source, trust): one read over a connection that trusted a client's own
/// anchors is answered only to callers with the same anchors. Misses are single-flight per
/// (issuer, trust) on this replica: concurrent callers wait for the one read in progress and
/// share its document or its error, so a restarted replica reads each document once, not once
/// per waiting request.
///
/// Thread-safety: any thread; reads run outside the locks, on the thread of the first caller.
public final class IssuerMetadataCache: IssuerDirectory {
    private let http: BlockingHTTP
    private let maxAge: TimeInterval
    private let entries = Mutex<[Key: (IssuerMetadata, Date)]>([:])
    private let rereads = Mutex<[Key: Date]>([:])
    private let flights = BlockingSingleFlight<Key, IssuerMetadata, TokenEndpointError>()

    /// A document as read through one trust.
    struct Key: Hashable, Sendable {
        let source: MetadataSource
        let trust: ProviderTrust
    }
    /// Reads that bypass the cache (`current`), single-flight apart from the misses: a caller of
    /// `current` must get a read that began after the cached document, never a cached answer.
    private let currentReads = BlockingSingleFlight<Key, IssuerMetadata, TokenEndpointError>()
    /// Re-reads asked for because a check against the metadata failed: at most one per this
    /// many seconds per issuer and trust.
    private let minRereadInterval: TimeInterval = 30

    public init(http: BlockingHTTP, maxAge: TimeInterval = 3600) {
        self.http = http
        self.maxAge = maxAge
    }

    /// Drops the cached document when a check against it failed (an IdP that changed what it
    /// advertises), so that the next use reads it again — rate-limited per issuer and trust.
    /// True when it was dropped.
    @discardableResult
    public func reread(_ source: MetadataSource, trustAnchors: String?, now: Date) -> Bool {
        let key = Key(source: source, trust: ProviderTrust(anchorsPEM: trustAnchors))
        let allowed = rereads.withLock { r -> Bool in
            if let last = r[key], now.timeIntervalSince(last) < minRereadInterval { return false }
            r[key] = now
            return true
        }
        if allowed { _ = entries.withLock { $0.removeValue(forKey: key) } }
        return allowed
    }

    public func metadata(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
        let key = Key(source: source, trust: ProviderTrust(anchorsPEM: trustAnchors))
        if let m = fresh(key, now: now) { return m }
        return try flights.run(key) { () throws(TokenEndpointError) -> IssuerMetadata in
            // A flight that ended just before this one began has filled the cache.
            if let m = fresh(key, now: now) { return m }
            let m = try fetch(source, key.trust)
            entries.withLock { $0[key] = (m, now) }
            return m
        }
    }

    /// Not rate-limited: each caller has a reason that a stale document must not decide (see
    /// LoginService's iss check), and concurrent callers share one read.
    public func current(_ source: MetadataSource, trustAnchors: String?, now: Date) throws(TokenEndpointError) -> IssuerMetadata {
        let key = Key(source: source, trust: ProviderTrust(anchorsPEM: trustAnchors))
        return try currentReads.run(key) { () throws(TokenEndpointError) -> IssuerMetadata in
            let m = try fetch(source, key.trust)
            entries.withLock { $0[key] = (m, now) }
            return m
        }
    }

    public func verify(_ source: MetadataSource, trustAnchors: String?) throws(TokenEndpointError) -> IssuerMetadata {
        try fetch(source, ProviderTrust(anchorsPEM: trustAnchors))
    }

    private func fresh(_ key: Key, now: Date) -> IssuerMetadata? {
        guard let (m, at) = entries.withLock({ $0[key] }), now.timeIntervalSince(at) < maxAge else { return nil }
        return m
    }

    /// Reads and checks the document now.
    private func fetch(_ source: MetadataSource, _ trust: ProviderTrust) throws(TokenEndpointError) -> IssuerMetadata {
        let issuer = source.issuer
        guard let discovery = source.url.flatMap(URL.init(string:)) else { throw .metadata("issuer is not a URL") }
        // What failures call the document: OpenID discovery, or RFC 8414's.
        let label = source.document == .openID ? "discovery" : "authorization server metadata"
        let reply: BlockingHTTP.Reply
        do { reply = try http.send("GET", discovery, headers: ["Accept: application/json"], trust: trust) } catch {
            switch error {
            case .notSent(let why), .unanswered(let why): throw .transient(reason: "\(label): \(why)", retryAfter: nil)
            case .certificateRefused(let why): throw .certificateRefused("\(label): \(why)")
            case .tooLarge: throw .metadata("\(label) document too large")
            }
        }
        if reply.status >= 500 || reply.status == 429 { throw .transient(reason: "\(label): HTTP \(reply.status)", retryAfter: nil) }
        guard reply.status == 200, let doc = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any] else {
            throw .metadata("\(label): no JSON document (HTTP \(reply.status))")
        }
        guard let named = doc["issuer"] as? String, named == source.namedIssuer else {
            let shown = (doc["issuer"] as? String).map { "'\($0.prefix(300))'" } ?? "no issuer"
            throw .metadata("\(label) at \(discovery.absoluteString) names \(shown), not the configured issuer '\(source.namedIssuer)' (they must be equal, character for character)")
        }
        guard let token = (doc["token_endpoint"] as? String).flatMap(URL.init(string:)) else {
            throw .metadata("\(label): no token_endpoint")
        }
        func url(_ k: String) -> URL? { (doc[k] as? String).flatMap(URL.init(string:)) }
        var m = IssuerMetadata(issuer: issuer, tokenEndpoint: token, authorizationEndpoint: url("authorization_endpoint"),
                               jwksURI: url("jwks_uri"), revocationEndpoint: url("revocation_endpoint"),
                               endSessionEndpoint: url("end_session_endpoint"),
                               issParameterSupported: doc["authorization_response_iss_parameter_supported"] as? Bool == true,
                               introspectionEndpoint: url("introspection_endpoint"),
                               pushedAuthorizationRequestEndpoint: url("pushed_authorization_request_endpoint"),
                               requirePushedAuthorizationRequests: doc["require_pushed_authorization_requests"] as? Bool == true)
        m.idTokenSigningAlgorithms = doc["id_token_signing_alg_values_supported"] as? [String]
        m.tokenEndpointAuthMethods = doc["token_endpoint_auth_methods_supported"] as? [String]
        m.tokenEndpointAuthSigningAlgorithms = doc["token_endpoint_auth_signing_alg_values_supported"] as? [String]
        m.dpopSigningAlgorithms = doc["dpop_signing_alg_values_supported"] as? [String]
        m.userinfoEndpoint = url("userinfo_endpoint")
        // RFC 8705 §5: only https URLs are taken as aliases; anything else is ignored.
        m.mtlsEndpointAliases = (doc["mtls_endpoint_aliases"] as? [String: Any]).map { a in
            a.compactMapValues { ($0 as? String).flatMap(URL.init(string:)).flatMap { $0.scheme?.lowercased() == "https" ? $0 : nil } }
        }
        return m
    }
}
