import Foundation

/// The login flow as a browser and an enrolling backend drive it: start at the broker, follow
/// the authorization URL to the IdP, bring the IdP's redirect back to the broker's callback.
extension World {
    /// POST /logins; the reply has login_id, authorization_url, expires_at. `endUser`: the
    /// `end_user` member as sent (any JSON value); `tenant` and `key`: another tenant's.
    func startLogin(subject: String, client: String? = nil, redirectAfter: String? = nil, scope: String? = nil, endUser: Any? = nil,
                    tenant: String? = nil, key: String? = nil) async throws -> HTTP.Reply {
        var body: [String: Any] = ["client": client ?? self.client, "login_hint": subject]
        if let redirectAfter { body["redirect_after"] = redirectAfter }
        if let scope { body["scope"] = scope }
        if let endUser { body["end_user"] = endUser }
        return try await HTTP.post(brokers[0].url + "/v1/tenants/\(tenant ?? self.tenant)/logins", key: key ?? workerKey, json: body)
    }

    /// The user at the IdP: GET the authorization URL, return where the IdP sends the browser.
    func authorize(_ authorizationURL: String) async throws -> String {
        let r = try await HTTP.get(authorizationURL)
        guard r.status == 303, let location = r.headers["location"] else {
            throw UnexpectedStatus(description: "authorize answered \(r.status), not a redirect")
        }
        for item in URLComponents(string: location)?.queryItems ?? [] where item.name == "code" || item.name == "state" {
            TestEnv.secret(item.value ?? "")
        }
        return location
    }

    /// The browser back at the broker's callback.
    func callback(_ url: String) async throws -> HTTP.Reply { try await HTTP.get(url) }

    /// A whole login; returns the callback's reply (JSON session document, no redirect_after).
    func login(subject: String, client: String? = nil, endUser: String? = nil, tenant: String? = nil, key: String? = nil) async throws -> HTTP.Reply {
        let started = try expectStatus(try await startLogin(subject: subject, client: client, endUser: endUser, tenant: tenant, key: key), 201)
        return try await callback(try await authorize(started["authorization_url"] as! String))
    }

    func count(_ table: String) throws -> Int {
        Int(try runPSQL("SELECT count(*) FROM \(table) WHERE tenant_id = '\(tenant)'").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
}

/// `url` with one query parameter replaced (or added).
func replacingQuery(_ url: String, _ name: String, _ value: String?) -> String {
    var c = URLComponents(string: url)!
    var items = (c.queryItems ?? []).filter { $0.name != name }
    if let value { items.append(URLQueryItem(name: name, value: value)) }
    c.queryItems = items
    return c.url!.absoluteString
}
