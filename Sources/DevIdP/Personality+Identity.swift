import Foundation

/// Who a user is at a personality: the id the provider would give the dev IdP's subject (stable,
/// derived from it), and the tenant they belong to.
extension Personality {
    /// The user's id at this provider: a number for `.numeric`, a string otherwise.
    func userID(_ subject: String) -> Any {
        let h = DevIdPCrypto.sha256(name + "\u{0}" + subject)
        switch userID {
        case .subject: return subject
        case .numeric: return number(subject)
        case .digits: return String(number(subject))
        case .prefixed(let p): return p + h.prefix(8).map { String(format: "%02X", $0) }.joined()
        case .guid: return Self.guid(h)
        case .bracedGUID: return "{" + Self.guid(h) + "}"
        }
    }

    /// A number of eight digits derived from the subject.
    func number(_ subject: String) -> Int {
        DevIdPCrypto.sha256(name + "#" + subject).prefix(4).reduce(0) { $0 << 8 | Int($1) } % 90_000_000 + 10_000_000
    }

    /// The user's id as text (an ID token's `sub`).
    func userIDText(_ subject: String) -> String { "\(userID(subject))" }

    /// The user's tenant: the personality's own, or with `.common` one that follows the domain
    /// of the login (`alice@contoso.test` and `bob@contoso.test` share one).
    func tenant(of subject: String) -> String? {
        switch tenancy {
        case .none: return nil
        case .single(let t): return t
        case .common:
            let domain = subject.split(separator: "@").last.map(String.init) ?? subject
            return Self.guid(DevIdPCrypto.sha256("tenant\u{0}" + domain))
        }
    }

    /// Whether users belong to tenants (ID tokens then carry `tid` and `oid`).
    var hasTenants: Bool {
        if case .none = tenancy { return false }
        return true
    }

    /// The issuer of this personality for `tenant` (or literally `{tenantid}` for nil), at `root`.
    func issuer(root: String, tenant: String?) -> String {
        root + "/p/" + name + paths.issuer.replacingOccurrences(of: "{tenant}", with: tenant ?? "{tenantid}")
    }

    private static func guid(_ h: [UInt8]) -> String {
        let x = h.prefix(16).map { String(format: "%02x", $0) }.joined()
        let c = Array(x)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(c[$0]) }.joined(separator: "-")
    }
}
