import BrokerCore
import Foundation

extension TokenService {
    public typealias BatchCompletion = @Sendable ([Result<IssuedToken, BrokerError>]) -> Void

    /// Answers every target on its own: one bad item never fails the others. Returns the
    /// results at once when every item was answered from memory; otherwise returns nil, starts
    /// the refreshes the held sessions need, loads the misses in one query, and calls
    /// `completion` when the last item is done or at the caller's deadline (`lockTimeout`),
    /// whichever comes first: an item still waiting then is `refresh_busy`. Every token is
    /// checked again as the answer is written: one with less life left than its item was
    /// promised (it waited for the slowest) is `refresh_busy` too, never handed out.
    public func batch(by principal: Principal, tenant: String, targets: [TokenTarget], request: TokenRequest,
                      completion: @escaping BatchCompletion) -> [Result<IssuedToken, BrokerError>]? {
        // Built in order, a placeholder where an item waits (the collector fills it in): the
        // answers from memory are returned as they are, never copied into a second array.
        var results: [Result<IssuedToken, BrokerError>] = []
        results.reserveCapacity(targets.count)
        var missing: [Int] = []
        var refreshes: [(index: Int, session: Session, client: ClientRegistration, need: TokenRequirement)] = []
        var log: HandOutLog? = HandOutLog(capacity: targets.count)
        for (i, t) in targets.enumerated() {
            switch lookUp(by: principal, tenant: tenant, target: t, request: request, log: &log) {
            case .answered(let r):
                results.append(r)
                continue
            case .refresh(let s, let c, let need): refreshes.append((i, s, c, need))
            case .miss: missing.append(i)
            }
            results.append(BatchCollector.pending)
        }
        log?.record(audit: audit, usage: usage, at: clock.now())
        if missing.isEmpty && refreshes.isEmpty { return results }

        let until = deadline()
        let collector = BatchCollector(results, waiting: missing + refreshes.map(\.index)) { [clock] results in
            let now = clock.now()
            completion(results.map { r in r.flatMap { $0.rechecked(at: now).map { .success($0) } ?? .failure(.refreshBusy) } })
        }
        // The items' own waits end at `until` with the held token if it serves; this catches
        // the ones still reading the store then.
        executor.after(max(0, until.timeIntervalSince(clock.now())) + Self.batchGrace) { collector.expire() }
        for r in refreshes {
            awaitRefresh(r.session, r.client, r.need, principal: principal, request: request, attempt: 0, until: until) { collector.set(r.index, $0) }
        }
        guard !missing.isEmpty else { return nil }
        let misses = missing
        executor.submit { [self] in
            let now = clock.now()
            // The tenant first (its error comes before any session's), then every missed
            // session id in one query: ids it does not find are answered here, not queried again.
            do { _ = try registry.activeTenant(tenant, now: now) } catch {
                for i in misses { collector.set(i, finish(.failure(refresher.brokerError(error, doing: "a token request")), principal, tenant, nil, now)) }
                return
            }
            let ids = misses.compactMap { i -> String? in if case .session(let id) = targets[i] { id } else { nil } }
            let found = preload(tenant: tenant, ids: ids)
            for i in misses {
                if case .session(let id) = targets[i], let found, !found.contains(id) {
                    collector.set(i, finish(.failure(.notFound("session")), principal, tenant, nil, now))
                    continue
                }
                token(by: principal, tenant: tenant, target: targets[i], request: request, until: until) { collector.set(i, $0) }
            }
        }
        return nil
    }

    /// How long past its deadline a batch waits for items whose own wait is answering.
    static let batchGrace: TimeInterval = 0.1
}
