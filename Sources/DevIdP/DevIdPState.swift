import BrokerCore
import Foundation

/// DevIdPState is everything the development provider remembers, in memory, guarded by one lock
/// held by DevIdP.
struct DevIdPState {
    struct Client {
        var secret: String?
        var redirectURIs: [String]
        var accessTTL: Int
        /// Registered with its own `access_ttl`, which wins over a personality's lifetime.
        var accessTTLGiven = false
        /// The algorithm of this client's ID tokens.
        var idTokenAlg: JWSAlgorithm = .es256
        /// private_key_jwt: the client's public keys (then it has no secret and is confidential).
        var jwks: [JSONWebKey] = []
        /// RFC 9449: this client's code exchanges and refreshes must carry DPoP proofs.
        var dpopRequired = false
        /// RFC 8693: the keys this client's actor tokens are signed with, and the audiences it may
        /// exchange for (empty: any).
        var actorJWKS: [JSONWebKey] = []
        var exchangeAudiences: [String] = []
        /// An app with token rotation on, at a personality where that is an app setting (Slack).
        var tokenRotation = false
        /// RFC 8705 §2: the SHA-256 (lowercase hex) of the certificate this client authenticates
        /// with on a verified TLS connection (`tls_client_auth` through the listener's CA, or
        /// `self_signed_tls_client_auth`); its tokens are bound to it (`cnf.x5t#S256`, §3.1).
        var tlsCertificateSHA256: String?
        /// RFC 8705 §2.1.2: `tls_client_auth` by the subject DN of a certificate the listener's CA
        /// issued (RFC 4514 text, compared as written).
        var tlsSubjectDN: String?
        /// The certificate (SHA-256, hex) this client last authenticated with: its tokens are bound
        /// to it (one connection per client at a time, as a development IdP may assume).
        var presentedCertificate: String?
        var mutualTLS: Bool { tlsCertificateSHA256 != nil || tlsSubjectDN != nil }
        var confidential: Bool { secret != nil || !jwks.isEmpty || mutualTLS }
    }

    /// A misbehaviour switched on for a client's next `remaining` responses.
    struct Switch {
        let mode: Misbehaviour
        var remaining: Int
    }

    struct Code {
        let client: String
        let redirectURI: String
        let challenge: String
        let nonce: String?
        let scope: String
        let subject: String
        let expires: Date
        /// RFC 9449 §10: the key the code must be redeemed with, when the request named one.
        var dpopJKT: String? = nil
    }

    /// A refresh token belongs to a family (one grant); only the newest member is current.
    struct Refresh {
        let family: String
        let client: String
        let subject: String
        let scope: String
        /// Which of a personality's tokens it refreshes (Slack's `bot` or `user`), if any.
        var kind: String? = nil
    }

    struct Family {
        var current: String
        var revoked: Bool
        let client: String
        let subject: String
        let authTime: Date
        /// The DPoP key the grant is bound to (RFC 9449): every refresh must prove it.
        var jkt: String? = nil
        /// How many access tokens the family has been issued; the next one gets this number.
        var accessIssued = 0
        /// Access tokens numbered below this were killed by a rotation (kill_old_access_tokens).
        var accessValidFrom = 0
        /// When each kill happened, by the `accessValidFrom` it set: tests ask when a token died.
        var kills: [(validFrom: Int, at: Date)] = []
        /// The personality whose token endpoint issued it (nil: the dev IdP's own): a family is
        /// refreshed only where it was issued.
        var personality: String? = nil
        /// How many refreshes it has had (a reusable token presented again is counted by it).
        var uses = 0

        /// When access token `number` was killed, if it was.
        func killedAt(_ number: Int) -> Date? { kills.first { $0.validFrom > number }?.at }
    }

    struct Stats {
        var calls: [String: Int] = [:]          // by grant_type
        var refreshesOK = 0
        var reuseDetected = 0
        var familiesRevoked = 0
        var revocations = 0
        var assertions = 0
        var endSessions = 0
        var userinfo = 0
        var refreshTimes: [String: [Double]] = [:]   // by subject: when each refresh succeeded
        /// refresh_token grants received that named a known refresh token, whatever came of them.
        var refreshPresentations = 0
        /// The `traceparent` headers of the latest token requests (at most 20).
        var traceparents: [String] = []
        var introspections = 0
        /// Token requests refused for their DPoP proof (a nonce challenge included): nothing consumed.
        var dpopRefusals = 0
        var exchanges = 0
        /// Personalities: a reusable refresh token presented again after a first refresh.
        var refreshRepeats = 0
        /// Personalities: revocations by style (`rfc7009`, `github`, `slack`, `dropbox`, `json`, `hubspot`).
        var revocationStyles: [String: Int] = [:]
        /// Personalities: revocations by the kind of token named (`access`, `refresh`, `unknown`).
        var revokedTokens: [String: Int] = [:]
        /// Personalities: "who am I" calls answered for a valid token.
        var whoAmI = 0
        /// client_credentials grants answered with a token.
        var clientCredentialsGrants = 0
        /// Requests authenticated by a client certificate (RFC 8705 §2), and those made at an
        /// `mtls_endpoint_aliases` endpoint (§5).
        var mtlsAuthentications = 0
        var mtlsAliasCalls = 0
        /// The certificates (SHA-256, hex) seen authenticating, and refused, for this client.
        var certificatesSeen: Set<String> = []
        var certificatesRefused = 0
    }

    /// A switch that makes an endpoint (`token` or `revoke`) fail — or, with status 0, answer
    /// `delayMS` late — for the next `remaining` requests.
    struct Failure {
        var endpoint: String = "token"
        var status: Int
        var retryAfter: Int?
        var remaining: Int
        var delayMS: Int = 0
        /// When set, the failing answer carries exactly this body (and `contentType`, if any)
        /// instead of the JSON `temporarily_unavailable`.
        var body: String?
        var contentType: String?
    }

    /// The switches of `POST /admin/settings`.
    struct Settings {
        var introspection = true
        /// RFC 7009: `revocation_endpoint` in discovery and `/revoke` answering; off plays an
        /// issuer that offers no revocation (discovery without it, `/revoke` 404).
        var revocation = true
        var killOldAccessTokens = false
        /// RFC 9207: advertise and send `iss` in authorization responses.
        var issParameter = true
        /// RFC 9126: `off`, `on` (the endpoint advertised), or `required` (no other request accepted).
        var par = "off"
        /// RFC 9449 §8, §9: proofs must carry the server's nonce, at the token endpoint and at `/resource`.
        var dpopNonce = false
        var resourceNonce = false
        /// glewlwyd's nonces: one per client, shared by its token, PAR and userinfo endpoints
        /// (`clientNonces`); PAR refuses a proof without it with 403 `invalid_dpop_proof` and no
        /// `DPoP-Nonce` header.
        var glewlwydNonce = false
        /// FAPI 2.0 strict mode: pushed requests only, DPoP on every token request, private_key_jwt
        /// whose assertion `aud` is the issuer identifier as one string, ID tokens ES256 or PS256.
        var fapi2 = false
        /// What discovery says ID tokens are signed with (nil: ES256, RS256, PS256), to play an
        /// issuer that advertises fewer.
        var idTokenAlgorithms: [String]?
    }
    /// The nonce proofs must carry while a nonce switch is on (a new one each time a switch changes).
    var dpopNonce = DevIdPState.newNonce()
    static func newNonce() -> String {
        var rng = SystemRandomNumberGenerator()
        return Identifiers.token(bytes: 12, using: &rng)
    }
    /// glewlwyd mode's nonce by client_id, made on a client's first proof, changed on demand
    /// (`POST /admin/dpop-nonce/rotate`).
    var clientNonces: [String: String] = [:]
    mutating func clientNonce(_ clientID: String) -> String {
        if let n = clientNonces[clientID] { return n }
        let n = Self.newNonce()
        clientNonces[clientID] = n
        return n
    }
    /// Proof `jti`s seen in the last two minutes (replays are refused), with when.
    var dpopJTIs: [String: Double] = [:]
    var dpopNonceChallenges = 0
    /// The protected resource's switches, and its counts by client (`""`: no token of ours).
    var resource = ResourceSwitches()
    var resourceCounters: [String: ResourceCounters] = [:]
    /// Pushed authorization requests by request_uri: the client, the parameters, the expiry (single use).
    var pushed: [String: (client: String, parameters: [String: String], expires: Date)] = [:]

    var clients: [String: Client] = [:]
    var codes: [String: Code] = [:]
    var refreshTokens: [String: Refresh] = [:]
    var families: [String: Family] = [:]
    var stats: [String: Stats] = [:]           // by client_id
    var failure: Failure?
    var defaultAccessTTL: Int
    var switches: [String: Switch] = [:]       // by client_id
    var usedAssertionIDs: Set<String> = []
    var jwksFetches = 0
    var discoveryFetches = 0
    /// Webhook test receivers by name: what each was sent, and whether it is down.
    var receivers: [String: Receiver] = [:]
    struct Receiver {
        var down = false
        /// Each delivery's webhook-id, webhook-timestamp and webhook-signature headers, body, arrival.
        var received: [(headers: [String: String], body: String, at: Double)] = []
    }
    var keys = DevIdPKeys(generation: 1)
    var refreshFault: RefreshFault?
    var stall: Stall?
    var settings = Settings()
    /// Every unexpired access token issued, by `jti` (see IssuedAccessToken).
    var accessTokens: [String: IssuedAccessToken] = [:]
    var accessIssuedSincePrune = 0
    /// Personalities' codes and opaque access tokens (DevIdP+PersonalityToken).
    var personalityCodes: [String: PersonalityCode] = [:]
    var personalityAccess: [String: PersonalityAccess] = [:]

    /// Takes one use of the failure switch when it is set for `endpoint`.
    mutating func takeFailure(_ endpoint: String) -> Failure? {
        guard var f = failure, f.endpoint == endpoint, f.remaining > 0 else { return nil }
        f.remaining -= 1
        failure = f.remaining > 0 ? f : nil
        return f
    }

    /// Takes one use of the refresh fault when it is set for `clientID` (or for any client).
    mutating func takeRefreshFault(_ clientID: String) -> RefreshFault? {
        guard var f = refreshFault, f.remaining > 0, f.client == nil || f.client == clientID else { return nil }
        f.remaining -= 1
        refreshFault = f.remaining > 0 ? f : nil
        return f
    }

    /// The stall in force at `now`, if any (an ended one is forgotten).
    mutating func stall(at now: Date) -> Stall? {
        guard let s = stall else { return nil }
        guard s.until > now else { stall = nil; return nil }
        return s
    }

    /// Remembers an access token just issued, as the family's next one; forgets expired ones
    /// now and then, which introspection cannot tell from never issued.
    mutating func record(jti: String, _ token: IssuedAccessToken, now: Date) {
        var t = token
        if let f = t.family, let family = families[f] {
            t.number = family.accessIssued
            families[f]?.accessIssued += 1
        }
        accessTokens[jti] = t
        accessIssuedSincePrune += 1
        if accessIssuedSincePrune >= 4096 {
            accessIssuedSincePrune = 0
            accessTokens = accessTokens.filter { $0.value.expires > now }
        }
    }

    /// Takes the client's switch for one response, if one is on and fits `authorize`.
    mutating func take(_ clientID: String, atAuthorize: Bool) -> Misbehaviour? {
        guard var s = switches[clientID], s.mode.atAuthorize == atAuthorize else { return nil }
        s.remaining -= 1
        switches[clientID] = s.remaining > 0 ? s : nil
        return s.mode
    }
}
