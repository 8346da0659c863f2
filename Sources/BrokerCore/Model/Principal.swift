import Foundation

/// Principal is the holder of an API key: what it may do and which tenants it may touch.
///
/// `tenants` containing `"*"` reaches every tenant; only keys made by the CLI or by another
/// all-tenant operator get it.
public struct Principal: Sendable, Equatable {
    public static let allTenants = "*"

    public let id: String
    public let name: String
    public let roles: Set<Role>
    public let tenants: Set<String>
    public let revokedAt: Date?
    /// After this instant the key is refused (nil: never).
    public let expiresAt: Date?
    /// The SHA-256 (lowercase hex) of the client certificate that stands for this principal on
    /// an mTLS listener; such a principal has no usable bearer key. Nil: a bearer key.
    public let certificateSHA256: String?

    public init(id: String, name: String, roles: Set<Role>, tenants: Set<String>, revokedAt: Date? = nil, expiresAt: Date? = nil,
                certificateSHA256: String? = nil) {
        self.id = id
        self.name = name
        self.roles = roles
        self.tenants = tenants
        self.revokedAt = revokedAt
        self.expiresAt = expiresAt
        self.certificateSHA256 = certificateSHA256
    }

    /// Whether `s` is a certificate fingerprint as stored: 64 lowercase hex digits.
    public static func isFingerprint(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// Whether the key may be used at `now`: not revoked, not expired.
    public func isValid(at now: Date) -> Bool { revokedAt == nil && (expiresAt.map { now < $0 } ?? true) }

    /// Whether this principal may act in `tenant`.
    public func reaches(tenant: String) -> Bool {
        tenants.contains(Principal.allTenants) || tenants.contains(tenant)
    }

    /// Authorize returns nil when the principal holds `role` in `tenant` (nil tenant: a global
    /// route), or the error to answer. A tenant it cannot reach is reported as not found, so a
    /// key never learns which other tenants exist.
    public func authorize(_ role: Role, tenant: String?) -> BrokerError? {
        if let tenant, !reaches(tenant: tenant) { return .notFound("tenant") }
        if tenant == nil, role == .operator, !tenants.contains(Principal.allTenants) {
            return .forbidden("this route needs an operator key for all tenants")
        }
        guard roles.contains(role) else { return .forbidden("this key lacks the '\(role.rawValue)' role") }
        return nil
    }
}
