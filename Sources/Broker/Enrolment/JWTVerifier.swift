import BrokerCore
import Foundation

/// JWTVerifier accepts the JWTs an IdP sends — ID tokens and back-channel logout
/// tokens — only when every check passes: a JWS with an asymmetric `alg` (`none` and HS* are
/// refused before any key is looked at), signed by the issuer's JWKS key named by `kid` and
/// allowing that alg, of the right `typ`, then the claims of IDTokenRules or LogoutTokenRules.
/// An unknown `kid` makes the key source fetch the JWKS once more (rate-limited there), which
/// is how a key rotation at the IdP is picked up.
public struct JWTVerifier: Sendable {
    let keys: any KeySetSource
    let signatures: any SignatureVerifier

    public init(keys: any KeySetSource, signatures: any SignatureVerifier) {
        self.keys = keys
        self.signatures = signatures
    }

    /// Why a token was not accepted: the token is bad, or its keys could not be fetched.
    public enum Failure: Error, Sendable, Equatable {
        case rejected(JOSEError)
        case keysUnavailable(TokenEndpointError)
    }

    /// An ID token. `budget` is whose JWKS re-fetch an unknown `kid` may spend: `.refresh` for
    /// refreshed ID tokens, which came on the authenticated channel — there an unknown kid after
    /// the re-fetch means the keys are not to be had yet (`keysUnavailable`), not a forgery.
    /// `trustAnchors` are the client's own (nil: the deployment's): the keys are those fetched
    /// with that trust.
    public func verify(_ token: String, _ expect: IDTokenExpectation, trustAnchors: String?, now: Date,
                       budget: RefetchBudget = .callback) throws(Failure) -> VerifiedIDToken {
        // An access token or a logout token must not pass for an ID token (RFC 9068 §4, RFC 8725 §3.11).
        let source = MetadataSource(issuer: expect.issuer, document: .openID, namedIssuer: expect.issuerTemplate)
        let jws = try signed(token, by: source, trustAnchors: trustAnchors, now: now, budget: budget) { !$0.hasSuffix("at+jwt") && !$0.hasSuffix("logout+jwt") }
        if let allowed = expect.algorithms, let alg = JWSAlgorithm(rawValue: jws.algorithm), !allowed.contains(alg) {
            throw .rejected(JOSEError("alg \(alg.rawValue) is not allowed by the client's profile (\(allowed.map(\.rawValue).sorted().joined(separator: ", ")))"))
        }
        do { return try IDTokenRules.check(jws.claims, expect, now: now) } catch { throw .rejected(error) }
    }

    /// A back-channel logout token (OpenID Connect Back-Channel Logout 1.0 §2.6).
    public func verifyLogoutToken(_ token: String, issuer: String, clientID: String, trustAnchors: String?,
                                  now: Date) throws(Failure) -> LogoutClaims {
        let jws = try signed(token, by: .openID(issuer), trustAnchors: trustAnchors, now: now, budget: .logoutToken) { $0 == "logout+jwt" || $0 == "application/logout+jwt" || $0 == "jwt" }
        do { return try LogoutTokenRules.check(jws.claims, issuer: issuer, clientID: clientID, now: now) } catch { throw .rejected(error) }
    }

    /// The JWS, once its alg, its `typ` (lowercased, when present) and its signature by one of
    /// `issuer`'s keys passed.
    private func signed(_ token: String, by issuer: MetadataSource, trustAnchors: String?, now: Date, budget: RefetchBudget,
                        typeAllowed: (String) -> Bool) throws(Failure) -> CompactJWS {
        let jws: CompactJWS
        do { jws = try CompactJWS.parse(token) } catch { throw .rejected(error) }
        guard let alg = JWSAlgorithm(rawValue: jws.algorithm) else {
            throw .rejected(JOSEError("alg is not an accepted asymmetric algorithm (ES256, RS256, PS256)"))
        }
        if let typ = jws.type?.lowercased(), !typeAllowed(typ) { throw .rejected(JOSEError("typ is not of this kind of token")) }
        // Only the expected issuer's keys are ever consulted: an `iss` claim cannot choose them.
        // A kid missing from the cached set is the one reason to fetch again; a known key with a
        // bad signature is a forgery, and fetching would not help.
        var candidates = try keys(for: jws, alg, issuer, trustAnchors, now: now, refetch: nil)
        if candidates.isEmpty { candidates = try keys(for: jws, alg, issuer, trustAnchors, now: now, refetch: budget) }
        guard !candidates.isEmpty else {
            if budget == .refresh { throw .keysUnavailable(.metadata("jwks: no key matches the kid of a refreshed ID token")) }
            throw .rejected(JOSEError("no key of the issuer matches kid and alg"))
        }
        guard candidates.contains(where: { signatures.verify(alg, key: $0, input: jws.signingInput, signature: jws.signature) }) else {
            throw .rejected(JOSEError("signature does not verify"))
        }
        return jws
    }

    /// The issuer's keys that allow `alg` and carry the token's `kid` (any, when it names none).
    private func keys(for jws: CompactJWS, _ alg: JWSAlgorithm, _ issuer: MetadataSource, _ trustAnchors: String?, now: Date,
                      refetch: RefetchBudget?) throws(Failure) -> [JSONWebKey] {
        let set: [JSONWebKey]
        do { set = try keys.keys(issuer, trustAnchors: trustAnchors, now: now, refetch: refetch) } catch { throw .keysUnavailable(error) }
        return set.filter { $0.allows(alg) && (jws.kid == nil || $0.kid == jws.kid) }
    }
}
