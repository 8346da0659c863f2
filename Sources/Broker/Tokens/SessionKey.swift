/// SessionKey names a session across the broker: tenant and id, always together.
public struct SessionKey: Hashable, Sendable {
    public let tenant: String
    public let id: String

    public init(tenant: String, id: String) {
        self.tenant = tenant
        self.id = id
    }
}
