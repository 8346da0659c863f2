import BrokerCore
import Foundation

extension ProxyService {
    /// Everything a call needs before its first send, checked in order: the token of its target,
    /// its client's upstream, a URL that stays under the base, no rate limit in force, its body.
    func prepare(_ call: ProxyCall, _ principal: Principal) -> Result<ProxyExchange, ProxyRefused> {
        let credential: ProxyCredential
        switch credentialFor(call, principal) {
        case .success(let c): credential = c
        case .failure(let e): return .failure(ProxyRefused(error: e, client: call.target.client ?? ""))
        }
        func refuse(_ e: BrokerError, host: String = "") -> Result<ProxyExchange, ProxyRefused> {
            .failure(ProxyRefused(error: e, client: credential.client, host: host, session: credential.session))
        }
        let settings: UpstreamSettings
        let certificate: ClientTLSCredential?
        do {
            guard let reg = try registry.client(tenant: call.tenant, id: credential.client, now: clock.now()) else { return refuse(.notFound("client")) }
            guard let s = reg.effectiveUpstream, s.baseURL != nil else {
                return refuse(.proxy(.noUpstream("the client '\(credential.client)' has no upstream base_url")))
            }
            settings = s
            // A client authenticating with mutual TLS presents its certificate to its upstream
            // too (RFC 8705 §3): its tokens may be bound to it. The current one: a replaced
            // certificate is used at once (its tokens were renewed with it by the token path).
            certificate = reg.authMethod.needsCertificate
                ? try registry.clientCertificate(tenant: call.tenant, id: credential.client, now: clock.now()) : nil
        } catch {
            return refuse(tokens.refresher.brokerError(error, doing: "a proxied call"))
        }
        let target: UpstreamURL
        switch base(settings, metadata: credential.metadata).flatMap({ UpstreamURL.resolve(under: $0, tail: call.tail, query: call.query) }) {
        case .success(let u): target = u
        case .failure(let r): return refuse(.proxy(r))
        }
        let backoff = UpstreamBackoffs.Key(tenant: call.tenant, client: credential.client, host: target.host)
        if let wait = backoffs.remaining(backoff, now: clock.now()) {
            metrics.rateLimitedLocally.add()
            return refuse(.proxy(.rateLimited(host: target.host, retryAfter: wait)), host: target.host)
        }
        let body: (any ByteSource)?
        switch replayableIfSmall(call.body) {
        case .success(let b): body = b
        case .failure(let r): return refuse(.proxy(r), host: target.host)
        }
        let machine = ProxyMachine(ProxyMachine.Request(
            method: call.method.uppercased(), url: target.url, origin: target.origin, replayable: body?.replayable ?? true,
            hasBody: body != nil, dpop: credential.type == .dpop, plain401InvalidToken: settings.plain401InvalidToken ?? false,
            retryRateLimited: settings.retryRateLimited, retryBudget: settings.retryBudget))
        return .success(ProxyExchange(call: call, credential: credential, settings: settings, target: target, backoff: backoff, body: body,
                                      machine: machine, certificate: certificate, nonceKey: call.tenant + "\u{1F}" + credential.client + "\u{1F}" + target.origin,
                                      forwarded: ProxyHeaders.request(call.headers)))
    }

    /// The upstream's base for these settings and session metadata, parsed once and kept.
    func base(_ settings: UpstreamSettings, metadata: String?) -> Result<UpstreamURL.Base, ProxyRefusal> {
        let key = (settings.allowPrivateAddresses ? "1" : "0") + (settings.baseURL ?? "") + "\u{1F}" + (metadata ?? "")
        if let known = bases.read({ $0[key] }) { return .success(known) }
        let made = UpstreamURL.base(settings.baseURL ?? "", metadata: metadata, allowHTTP: settings.allowPrivateAddresses)
        if case .success(let b) = made {
            bases.write { held in
                if held.count >= 10_000 { held.removeAll() }
                held[key] = b
            }
        }
        return made
    }

    /// The caller's body, held in memory when it is short and of known length (so that it can be
    /// sent again), else as it comes; refused when it broke off while being read.
    func replayableIfSmall(_ body: (any ByteSource)?) -> Result<(any ByteSource)?, ProxyRefusal> {
        guard let body, !body.replayable, let n = body.length, n <= limits.replayBytes else { return .success(body) }
        var bytes = [UInt8](repeating: 0, count: n)
        var filled = 0
        while filled < n {
            guard let k = bytes.withUnsafeMutableBytes({ body.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }) else {
                return .failure(.bodyAbandoned)
            }
            if k == 0 { break }
            filled += k
        }
        guard filled == n else { return .failure(.bodyAbandoned) }
        return .success(BufferedBody(bytes))
    }

    /// The body length the caller is told: the upstream's `Content-Length`, none for a HEAD or a
    /// status that has no body.
    static func length(_ head: UpstreamHead, method: String) -> Int? {
        if method == "HEAD" || head.status == 204 || head.status == 304 || head.status < 200 { return 0 }
        return head.header("content-length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// What the caller is told when no head came back.
    static func refusal(_ failure: UpstreamFailure, host: String) -> ProxyRefusal {
        switch failure {
        case .notSent(let why): .unreachable(host: host, reason: why)
        case .unanswered(let why): .unreachable(host: host, reason: why)
        case .addressRefused: .addressRefused(host: host)
        case .bodyAbandoned: .bodyAbandoned
        }
    }

}
