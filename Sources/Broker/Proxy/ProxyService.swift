import BrokerCore
import Foundation
import Synchronization

/// ProxyService forwards a worker's API call to its client's upstream with the credentials the
/// broker holds, so that the worker never sees a token: the driver of ProxyMachine, which
/// decides what each upstream answer leads to (a nonce retry, a refresh and a resend, a wait,
/// a same-origin redirect, or the answer passed on).
///
/// Each call runs on one of the proxy's own threads (`ProxyLimits.workers`), never on an HTTP
/// thread nor the token path's executor: a slow upstream holds only its own. Calls beyond the
/// threads and the queue are answered 503 `proxy_busy` at once.
public final class ProxyService: Service {
    public let name = "proxy"
    /// Where the call's answer goes: the route answers the caller, and for a head hands back
    /// the sink the upstream's body is streamed into (nil: the caller is gone).
    public typealias Answer = @Sendable (ProxyAnswer) -> (any ByteSink)?

    let tokens: TokenService
    let appTokens: AppTokenService
    let registry: RegistryCache
    let transport: any UpstreamTransport
    let audit: any AuditSink
    let clock: any Clock
    let limits: ProxyLimits
    /// Rate limits the upstreams asked for, on this replica.
    public let backoffs = UpstreamBackoffs()
    public let metrics = ProxyMetrics()
    /// Resource servers' DPoP nonces, by tenant, client and origin.
    let nonces = DPoPNonces()
    private let workers: BlockingExecutor
    /// Upstream bases parsed, by settings and session metadata (bounded).
    private let bases = ReadMostly<[String: UpstreamURL.Base]>([:])

    public init(tokens: TokenService, appTokens: AppTokenService, registry: RegistryCache, transport: any UpstreamTransport,
                audit: any AuditSink, clock: any Clock, limits: ProxyLimits) {
        self.tokens = tokens
        self.appTokens = appTokens
        self.registry = registry
        self.transport = transport
        self.audit = audit
        self.clock = clock
        self.limits = limits
        workers = BlockingExecutor(threads: limits.workers, name: "proxy")
    }

    /// Forwards `call` for `principal`; `answer` is called once with the head or the refusal.
    public func forward(_ call: ProxyCall, by principal: Principal, answer: @escaping Answer) {
        guard metrics.inFlight.wrappingAdd(1, ordering: .relaxed).newValue <= limits.workers + limits.queue else {
            metrics.inFlight.wrappingSubtract(1, ordering: .relaxed)
            let refusal = ProxyRefusal.busy(retryAfter: 1)
            record(call.tenant, client: call.target.client ?? "", host: "", session: nil, principal, outcome: refusal.code)
            _ = answer(.refused(.proxy(refusal)))
            return
        }
        workers.submit { [self] in
            defer { metrics.inFlight.wrappingSubtract(1, ordering: .relaxed) }
            run(call, principal, answer)
        }
    }

    public func start() {}

    /// Stops the threads once the calls admitted are done (the listeners, stopped first, no
    /// longer admit any).
    public func stop(deadline: Date) { workers.shutdown() }

    /// One call, start to end, on a proxy thread.
    private func run(_ call: ProxyCall, _ principal: Principal, _ answer: Answer) {
        var credential: ProxyCredential
        switch credentialFor(call, principal) {
        case .success(let c): credential = c
        case .failure(let e):
            record(call.tenant, client: call.target.client ?? "", host: "", session: nil, principal, outcome: e.code)
            _ = answer(.refused(e))
            return
        }
        let client = credential.client, session = credential.session
        func refuse(_ e: BrokerError, host: String = "") {
            record(call.tenant, client: client, host: host, session: session, principal, outcome: e.code)
            _ = answer(.refused(e))
        }
        let settings: UpstreamSettings
        do {
            guard let reg = try registry.client(tenant: call.tenant, id: client, now: clock.now()) else { return refuse(.notFound("client")) }
            guard let s = reg.effectiveUpstream, s.baseURL != nil else {
                return refuse(.proxy(.noUpstream("the client '\(client)' has no upstream base_url")))
            }
            settings = s
        } catch {
            return refuse(tokens.refresher.brokerError(error, doing: "a proxied call"))
        }
        let target: UpstreamURL
        switch base(settings, metadata: credential.metadata).flatMap({ UpstreamURL.resolve(under: $0, tail: call.tail, query: call.query) }) {
        case .success(let u): target = u
        case .failure(let r): return refuse(.proxy(r))
        }
        let backoff = UpstreamBackoffs.Key(tenant: call.tenant, client: client, host: target.host)
        if let wait = backoffs.remaining(backoff, now: clock.now()) {
            metrics.rateLimitedLocally.add()
            return refuse(.proxy(.rateLimited(host: target.host, retryAfter: wait)), host: target.host)
        }
        let body: (any ByteSource)?
        switch replayableIfSmall(call.body) {
        case .success(let b): body = b
        case .failure(let r): return refuse(.proxy(r), host: target.host)
        }
        var machine = ProxyMachine(ProxyMachine.Request(
            method: call.method.uppercased(), url: target.url, origin: target.origin, replayable: body?.replayable ?? true,
            hasBody: body != nil, dpop: credential.type == .dpop, plain401InvalidToken: settings.plain401InvalidToken ?? false,
            retryRateLimited: settings.retryRateLimited, retryBudget: settings.retryBudget))
        let nonceKey = call.tenant + "\u{1F}" + client + "\u{1F}" + target.origin
        let forwarded = ProxyHeaders.request(call.headers)
        var action = machine.start(nonce: nonces[nonceKey])
        var bodySent = false
        var renewal: BrokerError?
        while true {
            switch action {
            case .send(let send):
                if send.withBody, bodySent, body?.rewind() != true { return refuse(.proxy(.bodyAbandoned), host: target.host) }
                let authorization: [(name: String, value: String)]
                switch self.authorization(&credential, call.tenant, send, principal) {
                case .success(let h): authorization = h
                case .failure(let e): return refuse(e, host: target.host)
                }
                let request = UpstreamRequest(method: send.method, url: send.url, headers: forwarded + authorization,
                                              body: send.withBody ? body : nil, allowPrivateAddresses: settings.allowPrivateAddresses,
                                              connectTimeout: limits.connectTimeout, totalTimeout: limits.totalTimeout,
                                              maxResponseBytes: limits.maxResponseBytes)
                bodySent = bodySent || send.withBody
                var next: ProxyMachine.Action?
                var delivered: Int?
                do throws(UpstreamFailure) {
                    try transport.send(request) { head in
                        let now = clock.now()
                        if let n = head.header("dpop-nonce") { nonces[nonceKey] = n }
                        var step = machine.head(status: head.status, headers: head.headers, now: now)
                        if let until = step.backoffUntil { backoffs.record(backoff, until: until, now: now) }
                        if step.refreshFirst {
                            // A 401 whose body cannot be sent again: the token is renewed for the
                            // calls to come, and this answer goes back saying so.
                            renewal = renew(&credential, call.tenant, principal)
                            step.action = machine.refreshed(ok: renewal == nil)
                        }
                        guard case .deliver(let refreshed) = step.action else {
                            next = step.action
                            return nil
                        }
                        let length = Self.length(head, method: send.method)
                        if let n = length, n > limits.maxResponseBytes {
                            next = .refuse(.responseTooLarge(limit: limits.maxResponseBytes))
                            return nil
                        }
                        delivered = head.status
                        // Counted and audited as the answer goes back (its body may still stream).
                        record(call.tenant, client: client, host: target.host, session: session, principal,
                               outcome: ProxyMetrics.statusClass(head.status))
                        var headers = ProxyHeaders.response(head.headers)
                        if let r = refreshed { headers.append((ProxyHeaders.tokenRefreshed, r ? "true" : "false")) }
                        return answer(.head(status: head.status, headers: headers, length: length))
                    }
                } catch {
                    return refuse(.proxy(Self.refusal(error, host: target.host)), host: target.host)
                }
                if delivered != nil { return }
                action = next ?? .refuse(.unreachable(host: target.host, reason: "no answer"))
            case .refresh:
                renewal = renew(&credential, call.tenant, principal)
                action = machine.refreshed(ok: renewal == nil)
            case .wait(let seconds):
                Thread.sleep(forTimeInterval: seconds)
                action = machine.waited()
            case .refuse(let r):
                return refuse(.proxy(r), host: target.host)
            case .failRefresh:
                return refuse(renewal ?? .internalError, host: target.host)
            case .deliver:
                // Only a head is delivered (above); the machine never asks for it here.
                return refuse(.internalError, host: target.host)
            }
        }
    }

    /// The upstream's base for these settings and session metadata, parsed once and kept.
    private func base(_ settings: UpstreamSettings, metadata: String?) -> Result<UpstreamURL.Base, ProxyRefusal> {
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
    private func replayableIfSmall(_ body: (any ByteSource)?) -> Result<(any ByteSource)?, ProxyRefusal> {
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

    /// Counts the call and audits it (coalesced with the principal's like calls).
    func record(_ tenant: String, client: String, host: String, session: String?, _ principal: Principal, outcome: String) {
        metrics.calls.add(ProxyMetrics.CallLabel(tenant: tenant, client: client, host: host, outcome: outcome))
        audit.record(AuditEvent(at: clock.now(), actor: principal.id, action: .proxyCall, tenant: tenant, session: session, outcome: outcome))
    }
}
