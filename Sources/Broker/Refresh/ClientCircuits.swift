import BrokerCore
import Foundation
import Synchronization

/// ClientCircuits keeps this replica's ClientCircuit per client (`tenant/client`). Circuits are
/// per replica (documented): N replicas probe a failing IdP N times per interval.
///
/// Thread-safety: any thread.
public final class ClientCircuits: Sendable {
    private let circuits = Mutex<[String: ClientCircuit]>([:])
    private let retry: RetryPolicy

    public init(retry: RetryPolicy) { self.retry = retry }

    /// Nil: call the IdP now (as the probe, when the circuit was open). Else not before then.
    func admit(_ client: String, now: Date) -> (blockedUntil: Date?, isProbe: Bool) {
        circuits.withLock { m in
            guard m[client] != nil else { return (nil, false) }
            return m[client]!.admit(now: now)
        }
    }

    func release(_ client: String) { circuits.withLock { $0[client]?.release() } }

    func report(_ client: String, _ health: RefreshFinish.Health, now: Date) {
        circuits.withLock { m in
            switch health {
            case .unchanged: m[client]?.release()
            case .ok: m[client] = nil
            case .failed(let after): m[client, default: ClientCircuit(retry: retry)].failed(retryAfter: after, now: now)
            }
        }
    }

    /// Clients whose circuit is open now, for metrics.
    public func open(now: Date) -> Int { circuits.withLock { m in m.values.filter { $0.blockedUntil(now: now) != nil }.count } }
}
