import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One tenant's tokens through one API key (role worker). Share one per process.
///
/// - A token is served from memory while it lives `minTTL` more seconds before
///   `expires_in − margin` (the margin at most half its lifetime); else it is asked for.
/// - Callers asking for the same session (or subject) at once share one request.
/// - A 503 is retried after its Retry-After (or a short backoff) while `maxWait` seconds last,
///   then thrown as `.unavailable`; a retry after `refresh_busy` drops `forceRefresh`: the
///   refresh that was running is the new token asked for.
/// - A 409 is `.needsReauth` or `.revoked` and forgets what was kept for that session.
public actor TokenBroker {
    /// What to fetch: a session, or a subject's newest active session at a client.
    public enum Item: Hashable, Sendable {
        case session(String)
        case subject(String, client: String)
    }

    private struct Key: Hashable { let item: Item; let scope: String? }
    private struct Flight { let force: Bool; let task: Task<Token, any Error> }

    private let base: URL
    private let authorization: String
    private let margin: Double, maxWait: Double, maxEntries: Int
    private let http: URLSession
    private let clock: @Sendable () -> Double
    private var kept: [Key: KeptToken] = [:]
    private struct AppKey: Hashable { let client: String, scope: String?, audience: String?, resource: String? }
    /// App tokens kept, with when they stop serving (received + expires_in − margin).
    private var keptApps: [AppKey: (token: AppToken, validUntil: Double)] = [:]
    private var flights: [Key: Flight] = [:]
    /// Requests sent to the broker (retries included).
    public private(set) var requestsSent = 0

    public init(baseURL: URL, apiKey: String, tenant: String, margin: Double = 30, maxWait: Double = 30,
                maxEntries: Int = 100_000, session: URLSession = .shared,
                clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        base = baseURL.appendingPathComponent("v1/tenants").appendingPathComponent(tenant)
        authorization = "Bearer " + apiKey
        (self.margin, self.maxWait, self.maxEntries, http, self.clock) = (margin, maxWait, maxEntries, session, clock)
    }

    // MARK: one token

    public func accessToken(session: String, minTTL: Int? = nil, scope: String? = nil,
                            forceRefresh: Bool = false) async throws(TokenBrokerError) -> Token {
        try await accessToken(.session(session), minTTL: minTTL, scope: scope, forceRefresh: forceRefresh)
    }

    public func accessToken(subject: String, client: String, minTTL: Int? = nil, scope: String? = nil,
                            forceRefresh: Bool = false) async throws(TokenBrokerError) -> Token {
        try await accessToken(.subject(subject, client: client), minTTL: minTTL, scope: scope, forceRefresh: forceRefresh)
    }

    public func accessToken(_ item: Item, minTTL: Int? = nil, scope: String? = nil,
                            forceRefresh: Bool = false) async throws(TokenBrokerError) -> Token {
        let key = Key(item: item, scope: scope)
        if !forceRefresh, let k = kept[key], k.serves(now: clock(), minTTL: minTTL ?? 0) { return k.token }
        while let flight = flights[key] {
            let joined = flight.force || !forceRefresh
            let outcome = await flight.task.result
            if joined { return try typed(outcome) }
            if flights[key]?.task == flight.task { flights[key] = nil }
        }
        let task = Task { try await self.fetch(item, minTTL: minTTL, scope: scope, force: forceRefresh) }
        flights[key] = Flight(force: forceRefresh, task: task)
        let outcome = await task.result
        if flights[key]?.task == task { flights[key] = nil }
        switch outcome {
        case .success(let token): keep(token, key)
        case .failure(let e as TokenBrokerError): forgetOn(e, key)
        case .failure: break
        }
        return try typed(outcome)
    }

    // MARK: a client's own token

    /// `client`'s own token (client credentials) for the scope, audience and resource: from
    /// memory while it lives `minTTL` more seconds before `expires_in − margin`, else from the
    /// broker, which shares one grant with every caller and replica and renews it ahead of
    /// expiry while it is asked for.
    public func appToken(client: String, scope: String? = nil, audience: String? = nil, resource: String? = nil,
                         minTTL: Int? = nil) async throws(TokenBrokerError) -> AppToken {
        let key = AppKey(client: client, scope: scope, audience: audience, resource: resource)
        if let k = keptApps[key], k.validUntil - clock() >= Double(max(minTTL ?? 0, 0)) { return k.token }
        var body: [String: Any] = [:]
        for (name, value) in [("scope", scope), ("audience", audience), ("resource", resource)] { if let value { body[name] = value } }
        if let minTTL { body["min_ttl"] = minTTL }
        let answer = try await send(path: "clients/\(client)/token", body: body, force: false)
        guard let token = AppToken(json: answer) else {
            throw .other(.init(status: 200, code: "invalid_response", message: "not an app token", requestID: nil))
        }
        let lifetime = Double(token.expiresIn)
        if keptApps.count >= maxEntries { keptApps.removeAll() }
        keptApps[key] = (token, clock() + lifetime - min(margin, lifetime / 2))
        return token
    }

    // MARK: many tokens

    /// One result per item, in order: a token or that item's error. Items kept in memory are
    /// not sent; the rest go in batches of at most 1,000. Throws only when a whole batch failed.
    public func accessTokens(_ items: [Item], minTTL: Int? = nil,
                             scope: String? = nil) async throws(TokenBrokerError) -> [Result<Token, TokenBrokerError>] {
        var results = [Result<Token, TokenBrokerError>?](repeating: nil, count: items.count)
        let now = clock()
        let ask = items.indices.filter { i in
            guard let k = kept[Key(item: items[i], scope: scope)], k.serves(now: now, minTTL: minTTL ?? 0) else { return true }
            results[i] = .success(k.token)
            return false
        }
        for start in stride(from: 0, to: ask.count, by: 1000) {
            let chunk = Array(ask[start..<min(start + 1000, ask.count)])
            var body: [String: Any] = ["items": chunk.map { Self.json(items[$0]) }]
            if let minTTL { body["min_ttl"] = minTTL }
            if let scope { body["scope"] = scope }
            let answer = try await send(path: "tokens:batch", body: body, force: false)
            for r in answer["results"] as? [[String: Any]] ?? [] {
                guard let index = r["index"] as? Int, chunk.indices.contains(index), let status = r["status"] as? Int else { continue }
                let i = chunk[index], key = Key(item: items[i], scope: scope)
                if status == 200, let token = Token(json: r) {
                    keep(token, key)
                    results[i] = .success(token)
                } else {
                    let e = TokenBrokerError.of(status: status, body: r, retryAfter: nil)
                    forgetOn(e, key)
                    results[i] = .failure(e)
                }
            }
        }
        return results.map { $0 ?? .failure(.other(.init(status: 0, code: "no_result", message: "", requestID: nil))) }
    }

    /// Drops what is kept for `session` (e.g. a resource server refused its token).
    public func forget(session: String) {
        kept = kept.filter { $0.value.token.sessionID != session }
    }

    // MARK: the wire

    private func fetch(_ item: Item, minTTL: Int?, scope: String?, force: Bool) async throws(TokenBrokerError) -> Token {
        var body: [String: Any] = [:]
        let path: String
        switch item {
        case .session(let id): path = "sessions/\(id)/token"
        case .subject(let sub, let client): (path, body["subject"], body["client"]) = ("token", sub, client)
        }
        if let minTTL { body["min_ttl"] = minTTL }
        if let scope { body["scope"] = scope }
        let answer = try await send(path: path, body: body, force: force)
        guard let token = Token(json: answer) else {
            throw .other(.init(status: 200, code: "invalid_response", message: "not a token", requestID: nil))
        }
        return token
    }

    /// Sends until a non-503 answer or `maxWait` is spent: the 200 body, or the typed error.
    private func send(path: String, body: [String: Any], force: Bool) async throws(TokenBrokerError) -> [String: Any] {
        let deadline = clock() + maxWait
        var force = force, backoff = 0.2
        while true {
            var b = body
            if force { b["force_refresh"] = true }
            let (status, answer, retryAfter) = await post(path, b)
            if status == 200 { return answer }
            let error = TokenBrokerError.of(status: status, body: answer, retryAfter: retryAfter)
            let wait = retryAfter ?? backoff
            guard case .unavailable = error, clock() + wait <= deadline else { throw error }
            try? await Task.sleep(nanoseconds: UInt64(wait * 1e9))   // cancelled: retry at once, then end
            backoff = min(backoff * 2, 2)
            if error.details.code == "refresh_busy" { force = false }
        }
    }

    private func post(_ path: String, _ body: [String: Any]) async -> (Int, [String: Any], Double?) {
        var req = URLRequest(url: base.appendingPathComponent(path))
        req.httpMethod = "POST"
        req.setValue(authorization, forHTTPHeaderField: "Authorization")
        req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        req.httpBody = try? JSONSerialization.data(withJSONObject: body)   // [String: Any] of JSON values: cannot fail
        requestsSent += 1
        do {
            let (data, response) = try await http.data(for: req)
            let http = response as? HTTPURLResponse
            let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
            return (http?.statusCode ?? 0, json, RetryAfter.seconds(http?.value(forHTTPHeaderField: "Retry-After")))
        } catch {
            return (503, ["error": "broker_unreachable", "message": error.localizedDescription], nil)
        }
    }

    // MARK: memory

    private func keep(_ token: Token, _ key: Key) {
        let k = KeptToken(token, now: clock(), margin: margin)
        if kept.count >= maxEntries {   // over the bound: what expired goes, then everything if that was not enough
            kept = kept.filter { $0.value.validUntil > k.obtained }
            if kept.count >= maxEntries { kept.removeAll() }
        }
        kept[key] = k
        kept[Key(item: .session(token.sessionID), scope: key.scope)] = k
    }

    private func forgetOn(_ error: TokenBrokerError, _ key: Key) {
        switch error {
        case .needsReauth, .revoked:
            kept[key] = nil
            if case .session(let id) = key.item { forget(session: id) }
        default: break
        }
    }

    private func typed(_ outcome: Result<Token, any Error>) throws(TokenBrokerError) -> Token {
        switch outcome {
        case .success(let t): return t
        case .failure(let e as TokenBrokerError): throw e
        case .failure(let e): throw .other(.init(status: 0, code: "client_error", message: "\(e)", requestID: nil))
        }
    }

    private static func json(_ item: Item) -> [String: Any] {
        switch item {
        case .session(let id): ["session_id": id]
        case .subject(let sub, let client): ["subject": sub, "client": client]
        }
    }
}
