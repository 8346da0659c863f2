import Foundation

/// UpstreamSettings is where a client's proxied calls go and how the proxy treats them: set on
/// the client registration (`upstream`), with defaults from its provider descriptor's
/// `upstream` (the provider's documented API base). Not secret: shown with the registration.
public struct UpstreamSettings: Sendable, Equatable {
    /// The API's base URL; `{member}` is filled from the session's kept metadata
    /// (`{instance_url}` for Salesforce). Nil: none set here.
    public var baseURL: String?
    /// Connections to loopback, private, link-local and metadata addresses are allowed (a
    /// development API, an internal service). Off by default.
    public var allowPrivateAddresses: Bool = false
    /// A 401 without any `error` in its `WWW-Authenticate` means the token is invalid (an API
    /// that answers a dead token with a bare 401). Nil: not said here.
    public var plain401InvalidToken: Bool?
    /// The broker waits out a 429/503's `Retry-After` itself and retries idempotent requests,
    /// while the waits together fit `retryBudget`.
    public var retryRateLimited: Bool = false
    /// Seconds of waiting one request may spend on `retryRateLimited`.
    public var retryBudget: TimeInterval = 10

    public init(baseURL: String? = nil, allowPrivateAddresses: Bool = false, plain401InvalidToken: Bool? = nil,
                retryRateLimited: Bool = false, retryBudget: TimeInterval = 10) {
        self.baseURL = baseURL
        self.allowPrivateAddresses = allowPrivateAddresses
        self.plain401InvalidToken = plain401InvalidToken
        self.retryRateLimited = retryRateLimited
        self.retryBudget = retryBudget
    }

    /// The longest budget a client may give.
    public static let maxRetryBudget: TimeInterval = 120

    /// Why a member is refused: the member's name and what it must be.
    public struct Invalid: Error, Equatable, Sendable {
        public let member: String
        public let reason: String
        public var message: String { "upstream.\(member) \(reason)" }
    }

    /// Reads a registration's `upstream` object (every member checked, unknown ones refused).
    /// `descriptor`: a provider descriptor's, which may only say `base_url` and
    /// `plain_401_invalid_token` (what the provider does, not what a client allows).
    public init(json o: [String: Any], descriptor: Bool = false) throws(Invalid) {
        let allowed: Set<String> = descriptor ? ["base_url", "plain_401_invalid_token"]
            : ["base_url", "allow_private_addresses", "plain_401_invalid_token", "retry_rate_limited", "retry_budget_seconds"]
        if let k = o.keys.sorted().first(where: { !allowed.contains($0) }) { throw Invalid(member: k, reason: "is not a member of upstream") }
        func bool(_ k: String) throws(Invalid) -> Bool? {
            guard let v = o[k], !(v is NSNull) else { return nil }
            guard let n = v as? NSNumber, JSONPointer.isBoolean(n) else { throw Invalid(member: k, reason: "must be true or false") }
            return n.boolValue
        }
        if let v = o["base_url"], !(v is NSNull) {
            guard let s = v as? String else { throw Invalid(member: "base_url", reason: "must be a string") }
            if let p = Self.baseProblem(s) { throw Invalid(member: "base_url", reason: p) }
            baseURL = s
        }
        allowPrivateAddresses = try bool("allow_private_addresses") ?? false
        plain401InvalidToken = try bool("plain_401_invalid_token")
        retryRateLimited = try bool("retry_rate_limited") ?? false
        if let v = o["retry_budget_seconds"], !(v is NSNull) {
            guard let n = v as? NSNumber, !JSONPointer.isBoolean(n), n.doubleValue >= 0, n.doubleValue <= Self.maxRetryBudget else {
                throw Invalid(member: "retry_budget_seconds", reason: "must be 0...\(Int(Self.maxRetryBudget)) seconds")
            }
            retryBudget = n.doubleValue
        }
    }

    /// What is wrong with a base URL template, or nil: absolute http(s) once its `{member}`s
    /// are filled (a template that starts with one is checked when it is filled), no user info,
    /// query or fragment.
    public static func baseProblem(_ s: String) -> String? {
        guard (1...2048).contains(s.utf8.count) else { return "must be 1...2048 characters" }
        if s.hasPrefix("{") { return s.contains("}") ? nil : "has an unclosed {member}" }
        let filled = UpstreamURL.fill(s) { _ in "x" }
        guard let filled, let c = URLComponents(string: filled), let scheme = c.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = c.host, !host.isEmpty else { return "must be an absolute https URL" }
        if c.user != nil || c.password != nil { return "must not carry user info" }
        if c.query != nil || c.fragment != nil { return "must not carry a query or fragment" }
        return nil
    }

    /// The compact JSON stored with a registration.
    public var json: String {
        var parts: [String] = []
        if let b = baseURL { parts.append("\"base_url\":\(DPoPProof.quoted(b))") }
        parts.append("\"allow_private_addresses\":\(allowPrivateAddresses)")
        if let p = plain401InvalidToken { parts.append("\"plain_401_invalid_token\":\(p)") }
        parts.append("\"retry_rate_limited\":\(retryRateLimited)")
        parts.append("\"retry_budget_seconds\":\(retryBudget == retryBudget.rounded() ? String(Int(retryBudget)) : String(retryBudget))")
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// Reads the stored JSON text back.
    public init(jsonText: String) throws(Invalid) {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(jsonText.utf8))) as? [String: Any] else {
            throw Invalid(member: "", reason: "is not a JSON object")
        }
        try self.init(json: o)
    }

    /// The settings in force: the registration's, its unset members from the descriptor's.
    public static func effective(client: UpstreamSettings?, descriptor: UpstreamSettings?) -> UpstreamSettings? {
        guard client != nil || descriptor != nil else { return nil }
        var s = client ?? UpstreamSettings()
        if s.baseURL == nil { s.baseURL = descriptor?.baseURL }
        if s.plain401InvalidToken == nil { s.plain401InvalidToken = descriptor?.plain401InvalidToken }
        return s
    }
}
