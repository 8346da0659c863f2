import BrokerCore
import Foundation
import Synchronization

extension TokenService {
    public typealias BatchCompletion = @Sendable ([Result<IssuedToken, BrokerError>]) -> Void

    /// Answers every target on its own: one bad item never fails the others. Returns the
    /// results at once when every item was answered from memory; otherwise returns nil, loads
    /// the misses in one query, and calls `completion` when the last item is done.
    public func batch(by principal: Principal, tenant: String, targets: [TokenTarget], request: TokenRequest,
                      completion: @escaping BatchCompletion) -> [Result<IssuedToken, BrokerError>]? {
        // Built in order, a placeholder where an item missed (the collector fills it in): the
        // answers from memory are returned as they are, never copied into a second array.
        var results: [Result<IssuedToken, BrokerError>] = []
        results.reserveCapacity(targets.count)
        var missing: [Int] = []
        var log: HandOutLog? = HandOutLog(capacity: targets.count)
        for (i, t) in targets.enumerated() {
            if let r = cachedToken(by: principal, tenant: tenant, target: t, request: request, log: &log) {
                results.append(r)
            } else {
                missing.append(i)
                results.append(BatchCollector.pending)
            }
        }
        log?.record(audit: audit, usage: usage, at: clock.now())
        if missing.isEmpty { return results }

        let collector = BatchCollector(results, remaining: missing.count, completion: completion)
        let misses = missing
        executor.submit { [self] in
            let now = clock.now()
            // The tenant first (its error comes before any session's), then every missed
            // session id in one query: ids it does not find are answered here, not queried again.
            do { _ = try registry.activeTenant(tenant, now: now) } catch {
                for i in misses { collector.set(i, finish(.failure(Self.brokerError(error)), principal, tenant, nil, now)) }
                return
            }
            let ids = misses.compactMap { i -> String? in if case .session(let id) = targets[i] { id } else { nil } }
            let found = preload(tenant: tenant, ids: ids)
            for i in misses {
                if case .session(let id) = targets[i], let found, !found.contains(id) {
                    collector.set(i, finish(.failure(.notFound("session")), principal, tenant, nil, now))
                    continue
                }
                token(by: principal, tenant: tenant, target: targets[i], request: request) { collector.set(i, $0) }
            }
        }
        return nil
    }
}

/// BatchCollector gathers a batch's results from whichever threads finish them.
final class BatchCollector: Sendable {
    /// Stands for an item not answered yet; every one is replaced before `completion` runs.
    static let pending = Result<IssuedToken, BrokerError>.failure(.refreshBusy)
    private let state: Mutex<(results: [Result<IssuedToken, BrokerError>], remaining: Int)>
    private let completion: TokenService.BatchCompletion

    init(_ results: [Result<IssuedToken, BrokerError>], remaining: Int, completion: @escaping TokenService.BatchCompletion) {
        state = Mutex((results, remaining))
        self.completion = completion
    }

    func set(_ i: Int, _ r: Result<IssuedToken, BrokerError>) {
        let done = state.withLock { s -> [Result<IssuedToken, BrokerError>]? in
            s.results[i] = r
            s.remaining -= 1
            return s.remaining == 0 ? s.results : nil
        }
        if let done { completion(done) }
    }
}
