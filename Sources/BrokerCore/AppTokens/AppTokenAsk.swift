/// AppTokenAsk is what a caller asks an app token for (RFC 6749 §4.4): the scopes, the
/// `audience` and the RFC 8707 `resource`, normalized so that asks meaning the same share one
/// stored token — scopes deduplicated and sorted, an empty audience or resource dropped.
public struct AppTokenAsk: Sendable, Hashable {
    public let scopes: [String]
    public let audience: String?
    public let resource: String?

    public init(scopes: [String] = [], audience: String? = nil, resource: String? = nil) {
        self.scopes = Array(Set(scopes.filter { !$0.isEmpty })).sorted()
        self.audience = audience.flatMap { $0.isEmpty ? nil : $0 }
        self.resource = resource.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The ask as one stable text: the key of its stored token within the client. Each part is
    /// length-prefixed, so no value can be read as another part.
    public var key: String {
        func part(_ name: String, _ v: String?) -> String { v.map { "\(name)\($0.utf8.count):\($0)" } ?? "\(name)-" }
        return part("s", scopes.isEmpty ? nil : scopes.joined(separator: " ")) + part("a", audience) + part("r", resource)
    }
}
