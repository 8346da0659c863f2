import Foundation

/// PendingLogin is an authorization request the broker started and the callback has not yet
/// completed. It is single use: the callback consumes it atomically, whatever
/// happens next. The verifier and nonce are secrets until the code is exchanged and are only
/// ever stored sealed; the state is stored as its SHA-256 only.
public struct PendingLogin: Sendable, Equatable {
    public let id: String
    public let tenant: String
    public let client: String
    /// The issuer the authorization request went to: the callback's `iss` must be this (RFC 9207).
    public let issuer: String
    public let stateHash: [UInt8]
    public let verifier: String
    public let nonce: String
    public let scopes: [String]
    public let redirectAfter: String?
    /// The DPoP key made for this login (RFC 9449 §10: its thumbprint went out as `dpop_jkt`),
    /// the session's key once the code is exchanged with it.
    public let dpopKey: DPoPKeyMaterial?
    /// The application's own id of the user signing in (EndUser), stored on the session the
    /// callback creates.
    public let endUser: String?
    public let createdAt: Date
    public let expiresAt: Date

    public init(id: String, tenant: String, client: String, issuer: String, stateHash: [UInt8], verifier: String, nonce: String,
                scopes: [String], redirectAfter: String?, createdAt: Date, expiresAt: Date, dpopKey: DPoPKeyMaterial? = nil,
                endUser: String? = nil) {
        self.id = id
        self.tenant = tenant
        self.client = client
        self.issuer = issuer
        self.stateHash = stateHash
        self.verifier = verifier
        self.nonce = nonce
        self.scopes = scopes
        self.redirectAfter = redirectAfter
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.dpopKey = dpopKey
        self.endUser = endUser
    }
}
