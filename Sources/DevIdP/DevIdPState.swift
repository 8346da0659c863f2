import BrokerCore
import Foundation

/// DevIdPState is everything the development provider remembers, in memory, guarded by one lock
/// held by DevIdP.
struct DevIdPState {
    struct Client {
        var secret: String?
        var redirectURIs: [String]
        var accessTTL: Int
        /// The algorithm of this client's ID tokens.
        var idTokenAlg: JWSAlgorithm = .es256
        /// private_key_jwt: the client's public keys (then it has no secret and is confidential).
        var jwks: [JSONWebKey] = []
        var confidential: Bool { secret != nil || !jwks.isEmpty }
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
    }

    /// A refresh token belongs to a family (one grant); only the newest member is current.
    struct Refresh {
        let family: String
        let client: String
        let subject: String
        let scope: String
    }

    struct Family {
        var current: String
        var revoked: Bool
        let client: String
        let subject: String
        let authTime: Date
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
    }

    /// A switch that makes an endpoint (`token` or `revoke`) fail — or, with status 0, answer
    /// `delayMS` late — for the next `remaining` requests.
    struct Failure {
        var endpoint: String = "token"
        var status: Int
        var retryAfter: Int?
        var remaining: Int
        var delayMS: Int = 0
    }

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
    var keys = DevIdPKeys(generation: 1)

    /// Takes one use of the failure switch when it is set for `endpoint`.
    mutating func takeFailure(_ endpoint: String) -> Failure? {
        guard var f = failure, f.endpoint == endpoint, f.remaining > 0 else { return nil }
        f.remaining -= 1
        failure = f.remaining > 0 ? f : nil
        return f
    }

    /// Takes the client's switch for one response, if one is on and fits `authorize`.
    mutating func take(_ clientID: String, atAuthorize: Bool) -> Misbehaviour? {
        guard var s = switches[clientID], s.mode.atAuthorize == atAuthorize else { return nil }
        s.remaining -= 1
        switches[clientID] = s.remaining > 0 ? s : nil
        return s.mode
    }
}
