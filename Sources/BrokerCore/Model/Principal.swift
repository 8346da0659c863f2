import Foundation

/// Principal is the holder of an API key: what it may do and which tenants it may touch.
///
/// `tenants` containing `"*"` reaches every tenant; only keys made by the CLI or by another
/// all-tenant operator get it.
public struct Principal: Sendable, Equatable {
    public static let allTenants = "*"

    /// The fields, shared by every copy: a principal is passed and captured several times on
    /// each request's way through the API-key check, and copying seven fields each time retained
    /// every string and set of them. Immutable, hence Sendable.
    private final class Storage: Sendable {
        let id: String
        let name: String
        let roles: Set<Role>
        let tenants: Set<String>
        let revokedAt: Date?
        let expiresAt: Date?
        let certificateSHA256: String?
        /// `tenants` holds `*`: read on every request, so decided once.
        let everyTenant: Bool
        /// `roles` as bits (Principal.bit), for the same reason.
        let roleBits: UInt

        init(id: String, name: String, roles: Set<Role>, tenants: Set<String>, revokedAt: Date?, expiresAt: Date?, certificateSHA256: String?) {
            self.id = id
            self.name = name
            self.roles = roles
            self.tenants = tenants
            self.revokedAt = revokedAt
            self.expiresAt = expiresAt
            self.certificateSHA256 = certificateSHA256
            everyTenant = tenants.contains(Principal.allTenants)
            roleBits = roles.reduce(0) { $0 | Principal.bit($1) }
        }
    }

    private let storage: Storage

    private static func bit(_ role: Role) -> UInt {
        switch role {
        case .worker: 1
        case .admin: 2
        case .enrol: 4
        case .operator: 8
        case .proxy: 16
        }
    }

    public var id: String { storage.id }
    public var name: String { storage.name }
    public var roles: Set<Role> { storage.roles }
    public var tenants: Set<String> { storage.tenants }
    public var revokedAt: Date? { storage.revokedAt }
    /// After this instant the key is refused (nil: never).
    public var expiresAt: Date? { storage.expiresAt }
    /// The SHA-256 (lowercase hex) of the client certificate that stands for this principal on
    /// an mTLS listener; such a principal has no usable bearer key. Nil: a bearer key.
    public var certificateSHA256: String? { storage.certificateSHA256 }

    public init(id: String, name: String, roles: Set<Role>, tenants: Set<String>, revokedAt: Date? = nil, expiresAt: Date? = nil,
                certificateSHA256: String? = nil) {
        storage = Storage(id: id, name: name, roles: roles, tenants: tenants, revokedAt: revokedAt, expiresAt: expiresAt,
                          certificateSHA256: certificateSHA256)
    }

    public static func == (a: Principal, b: Principal) -> Bool {
        a.storage === b.storage || (a.id == b.id && a.name == b.name && a.roles == b.roles && a.tenants == b.tenants
            && a.revokedAt == b.revokedAt && a.expiresAt == b.expiresAt && a.certificateSHA256 == b.certificateSHA256)
    }

    /// Whether `s` is a certificate fingerprint as stored: 64 lowercase hex digits.
    public static func isFingerprint(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// Whether the key may be used at `now`: not revoked, not expired.
    public func isValid(at now: Date) -> Bool { revokedAt == nil && (expiresAt.map { now < $0 } ?? true) }

    /// Whether this principal may act in `tenant`.
    public func reaches(tenant: String) -> Bool {
        storage.everyTenant || storage.tenants.contains(tenant)
    }

    /// Authorize returns nil when the principal holds `role` in `tenant` (nil tenant: a global
    /// route), or the error to answer. A tenant it cannot reach is reported as not found, so a
    /// key never learns which other tenants exist.
    public func authorize(_ role: Role, tenant: String?) -> BrokerError? {
        if let tenant, !reaches(tenant: tenant) { return .notFound("tenant") }
        if tenant == nil, role == .operator, !storage.everyTenant {
            return .forbidden("this route needs an operator key for all tenants")
        }
        guard storage.roleBits & Self.bit(role) != 0 else { return .forbidden("this key lacks the '\(role.rawValue)' role") }
        return nil
    }
}
