import Foundation

/// DevIdPState is everything the development provider remembers, in memory, guarded by one lock
/// held by DevIdP.
struct DevIdPState {
    struct Client {
        var secret: String?
        var redirectURIs: [String]
        var accessTTL: Int
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
        var refreshTimes: [String: [Double]] = [:]   // by subject: when each refresh succeeded
    }

    /// A switch that makes the token endpoint misbehave for the next `remaining` requests.
    struct Failure {
        var status: Int
        var retryAfter: Int?
        var remaining: Int
    }

    var clients: [String: Client] = [:]
    var codes: [String: Code] = [:]
    var refreshTokens: [String: Refresh] = [:]
    var families: [String: Family] = [:]
    var stats: [String: Stats] = [:]           // by client_id
    var failure: Failure?
    var defaultAccessTTL: Int
}
