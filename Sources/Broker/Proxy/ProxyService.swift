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
    let bases = ReadMostly<[String: UpstreamURL.Base]>([:])

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

    /// One call, start to end, on a proxy thread: what it needs, then its exchanges with the upstream.
    private func run(_ call: ProxyCall, _ principal: Principal, _ answer: Answer) {
        switch prepare(call, principal) {
        case .failure(let refused):
            record(call.tenant, client: refused.client, host: refused.host, session: refused.session, principal, outcome: refused.error.code)
            _ = answer(.refused(refused.error))
        case .success(var exchange):
            if let e = self.exchange(&exchange, principal, answer) {
                record(call.tenant, client: exchange.credential.client, host: exchange.target.host, session: exchange.credential.session,
                       principal, outcome: e.code)
                _ = answer(.refused(e))
            }
        }
    }

    /// Sends as the machine says until an answer goes back to the caller (nil), or the caller is
    /// to be refused (the error).
    private func exchange(_ x: inout ProxyExchange, _ principal: Principal, _ answer: Answer) -> BrokerError? {
        let host = x.target.host
        var action = x.machine.start(nonce: nonces[x.nonceKey])
        var bodySent = false
        var renewal: BrokerError?
        while true {
            switch action {
            case .send(let send):
                if send.withBody, bodySent, x.body?.rewind() != true { return .proxy(.bodyAbandoned) }
                let authorization: [(name: String, value: String)]
                switch self.authorization(&x.credential, x.call.tenant, send, principal) {
                case .success(let h): authorization = h
                case .failure(let e): return e
                }
                let request = UpstreamRequest(method: send.method, url: send.url, headers: x.forwarded + authorization,
                                              body: send.withBody ? x.body : nil, allowPrivateAddresses: x.settings.allowPrivateAddresses,
                                              connectTimeout: limits.connectTimeout, totalTimeout: limits.totalTimeout,
                                              maxResponseBytes: limits.maxResponseBytes, clientCertificate: x.certificate)
                bodySent = bodySent || send.withBody
                var next: ProxyMachine.Action?
                var delivered = false
                do throws(UpstreamFailure) {
                    try transport.send(request) { head in
                        let now = clock.now()
                        if let n = head.header("dpop-nonce") { nonces[x.nonceKey] = n }
                        var step = x.machine.head(status: head.status, headers: head.headers, now: now)
                        if let until = step.backoffUntil { backoffs.record(x.backoff, until: until, now: now) }
                        if step.refreshFirst {
                            // A 401 whose body cannot be sent again: the token is renewed for the
                            // calls to come, and this answer goes back saying so.
                            renewal = renew(&x.credential, x.call.tenant, principal)
                            step.action = x.machine.refreshed(ok: renewal == nil)
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
                        delivered = true
                        // Counted and audited as the answer goes back (its body may still stream).
                        record(x.call.tenant, client: x.credential.client, host: host, session: x.credential.session, principal,
                               outcome: ProxyMetrics.statusClass(head.status))
                        var headers = ProxyHeaders.response(head.headers)
                        if let r = refreshed { headers.append((ProxyHeaders.tokenRefreshed, r ? "true" : "false")) }
                        return answer(.head(status: head.status, headers: headers, length: length))
                    }
                } catch {
                    return .proxy(Self.refusal(error, host: host))
                }
                if delivered { return nil }
                action = next ?? .refuse(.unreachable(host: host, reason: "no answer"))
            case .refresh:
                renewal = renew(&x.credential, x.call.tenant, principal)
                action = x.machine.refreshed(ok: renewal == nil)
            case .wait(let seconds):
                Thread.sleep(forTimeInterval: seconds)
                action = x.machine.waited()
            case .refuse(let r):
                return .proxy(r)
            case .failRefresh:
                return renewal ?? .internalError
            case .deliver:
                // Only a head is delivered (above); the machine never asks for it here.
                return .internalError
            }
        }
    }

    /// Counts the call and audits it (coalesced with the principal's like calls).
    func record(_ tenant: String, client: String, host: String, session: String?, _ principal: Principal, outcome: String) {
        metrics.calls.add(ProxyMetrics.CallLabel(tenant: tenant, client: client, host: host, outcome: outcome))
        audit.record(AuditEvent(at: clock.now(), actor: principal.id, action: .proxyCall, tenant: tenant, session: session, outcome: outcome))
    }
}
