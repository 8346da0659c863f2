import BrokerCore
import Foundation

/// IDTokenVerifier accepts an ID token only when every check of spec §7 passes: a JWS with an
/// asymmetric `alg` (`none` and HS* are refused before any key is looked at), signed by the
/// issuer's JWKS key named by `kid` and allowing that alg, then the claims of IDTokenRules. An
/// unknown `kid` makes the key source fetch the JWKS once more (rate-limited there), which is
/// how a key rotation at the IdP is picked up.
public struct IDTokenVerifier: Sendable {
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

    public func verify(_ token: String, _ expect: IDTokenExpectation, now: Date) throws(Failure) -> VerifiedIDToken {
        let jws: CompactJWS
        do { jws = try CompactJWS.parse(token) } catch { throw .rejected(error) }
        guard let alg = JWSAlgorithm(rawValue: jws.algorithm) else {
            throw .rejected(JOSEError("alg is not an accepted asymmetric algorithm (ES256, RS256, PS256)"))
        }
        if let typ = jws.type?.lowercased(), typ.hasSuffix("at+jwt") || typ.hasSuffix("logout+jwt") {
            throw .rejected(JOSEError("typ says this is not an ID token"))   // RFC 9068 §4, RFC 8725 §3.11
        }
        // Only the expected issuer's keys are ever consulted: an `iss` claim cannot choose them.
        // A kid missing from the cached set is the one reason to fetch again; a known key with a
        // bad signature is a forgery, and fetching would not help.
        var candidates = try keys(for: jws, alg, expect.issuer, now: now, refetch: false)
        if candidates.isEmpty { candidates = try keys(for: jws, alg, expect.issuer, now: now, refetch: true) }
        guard !candidates.isEmpty else { throw .rejected(JOSEError("no key of the issuer matches kid and alg")) }
        guard candidates.contains(where: { signatures.verify(alg, key: $0, input: jws.signingInput, signature: jws.signature) }) else {
            throw .rejected(JOSEError("signature does not verify"))
        }
        do { return try IDTokenRules.check(jws.claims, expect, now: now) } catch { throw .rejected(error) }
    }

    /// The issuer's keys that allow `alg` and carry the token's `kid` (any, when it names none).
    private func keys(for jws: CompactJWS, _ alg: JWSAlgorithm, _ issuer: String, now: Date, refetch: Bool) throws(Failure) -> [JSONWebKey] {
        let set: [JSONWebKey]
        do { set = try keys.keys(issuer: issuer, now: now, refetch: refetch) } catch { throw .keysUnavailable(error) }
        return set.filter { $0.allows(alg) && (jws.kid == nil || $0.kid == jws.kid) }
    }
}
