import Foundation

/// IdPEndpoint names an endpoint of a client's authorization server that the broker calls, as
/// a refusal reports it and as a nonce's origin is remembered.
public enum IdPEndpoint: String, Sendable, Equatable, CaseIterable {
    case token
    case pushedAuthorizationRequest = "pushed_authorization_request"
    case revocation
    case introspection
    case userinfo

    /// The endpoint as a sentence names it ("the token endpoint").
    public var phrase: String {
        switch self {
        case .token: "the token endpoint"
        case .pushedAuthorizationRequest: "the pushed authorization request endpoint"
        case .revocation: "the revocation endpoint"
        case .introspection: "the introspection endpoint"
        case .userinfo: "the userinfo endpoint"
        }
    }
}

/// ServerNonce is a client's current DPoP nonce at its authorization server (RFC 9449 §8): the
/// last `DPoP-Nonce` any of that server's endpoints sent, on a success or a refusal alike. One
/// per (tenant, client), shared by every endpoint the broker calls and by every replica: a
/// server such as glewlwyd keeps one nonce per client for its token, PAR and userinfo
/// endpoints. Nonces are not secrets, but they stay out of logs all the same.
public struct ServerNonce: Sendable, Equatable {
    public let tenant: String
    /// The broker's id of the client (not the IdP's `client_id`).
    public let client: String
    /// The issuer the nonce came from: a client moved to another issuer starts without one.
    public let issuer: String
    public let value: String
    /// Which endpoint's answer carried it.
    public let learnedFrom: IdPEndpoint
    public let learnedAt: Date

    public init(tenant: String, client: String, issuer: String, value: String, learnedFrom: IdPEndpoint, learnedAt: Date) {
        self.tenant = tenant
        self.client = client
        self.issuer = issuer
        self.value = value
        self.learnedFrom = learnedFrom
        self.learnedAt = learnedAt
    }
}

/// RefusalContext is what a refused request to an authorization server carried: which endpoint,
/// whether a DPoP proof went with it, and the nonce's origin — so that a refusal is reported as
/// the server said it, next to what the broker sent, and never with a guessed cause.
public struct RefusalContext: Sendable, Equatable {
    public let endpoint: IdPEndpoint
    public let proof: Bool
    /// Where the nonce in the last proof came from; nil when the proof carried none.
    public let nonceFrom: IdPEndpoint?
    /// Whether this was the one resend a nonce refusal allows (RFC 9449 §8).
    public let resent: Bool
    /// The `x5t#S256` of the client certificate the request presented (RFC 8705 §2); nil: none.
    public var certificate: String? = nil

    public init(endpoint: IdPEndpoint, proof: Bool, nonceFrom: IdPEndpoint?, resent: Bool = false) {
        self.endpoint = endpoint
        self.proof = proof
        self.nonceFrom = nonceFrom
        self.resent = resent
    }

    /// "at the token endpoint, with a DPoP proof carrying the nonce learned from the
    /// pushed authorization request endpoint (sent again with a new nonce)": names, never values.
    public var summary: String {
        var s = "at \(endpoint.phrase), "
        if !proof { s += "without a DPoP proof" } else if let from = nonceFrom {
            s += "with a DPoP proof carrying the nonce learned from \(from.phrase)"
        } else {
            s += "with a DPoP proof without a nonce (none known for this client)"
        }
        if resent { s += " (sent again with a new nonce)" }
        if let c = certificate { s += ", presenting the client certificate x5t#S256 \(c)" }
        return s
    }
}
