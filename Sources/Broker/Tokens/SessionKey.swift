/// SessionKey names a session across the broker: tenant and id, always together.
public struct SessionKey: Hashable, Sendable {
    public let tenant: String
    public let id: String

    public init(tenant: String, id: String) {
        self.tenant = tenant
        self.id = id
    }

    /// Hashes the id alone: ids are random and unique across tenants, so the tenant (still
    /// compared by ==) would only double the hashing on every cache lookup and usage mark.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
