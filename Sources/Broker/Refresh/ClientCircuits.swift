import BrokerCore
import Foundation
import Synchronization

/// ClientCircuits keeps this replica's ClientCircuit per client (`tenant/client`). Circuits are
/// per replica (documented): N replicas probe a failing IdP N times per interval. A change of a
/// client's registration closes its circuit on every replica at once (`forget`, fed by the
/// change feed like RegistryCache): after the operator fixes a refused client, nobody waits
/// for a backoff that was about the old registration.
///
/// Thread-safety: any thread.
public final class ClientCircuits: Sendable {
    private let circuits = Mutex<[String: ClientCircuit]>([:])
    private let retry: RetryPolicy

    public init(retry: RetryPolicy) { self.retry = retry }

    /// Nil: call the IdP now (as the probe, when the circuit was open). Else not before then,
    /// and callers get `refusal` when the IdP refused the client (nil: an outage).
    func admit(_ client: String, now: Date) -> (blockedUntil: Date?, isProbe: Bool, refusal: BrokerError?) {
        circuits.withLock { m in
            guard m[client] != nil else { return (nil, false, nil) }
            let (until, probe) = m[client]!.admit(now: now)
            return (until, probe, until == nil ? nil : m[client]!.refusal)
        }
    }

    func release(_ client: String) { circuits.withLock { $0[client]?.release() } }

    func report(_ client: String, _ health: RefreshFinish.Health, now: Date) {
        circuits.withLock { m in
            switch health {
            case .unchanged: m[client]?.release()
            case .ok: m[client] = nil
            case .failed(let after): m[client, default: ClientCircuit(retry: retry)].failed(retryAfter: after, now: now)
            case .refused(let error): m[client, default: ClientCircuit(retry: retry)].failed(retryAfter: nil, now: now, refusal: error)
            }
        }
    }

    /// Applies a change published by any replica: a client's (or its tenant's) registration
    /// changed, so its circuit closes; after a resync (notices were lost) every circuit does —
    /// at worst one more probe each.
    public func forget(_ change: Change) {
        circuits.withLock { m in
            switch change {
            case .client(let tenant, let id): m[tenant + "/" + id] = nil
            case .tenant(let tenant): m = m.filter { !$0.key.hasPrefix(tenant + "/") }
            case .resync: m.removeAll()
            default: break
            }
        }
    }

    /// Clients whose circuit is open now, for metrics.
    public func open(now: Date) -> Int { circuits.withLock { m in m.values.filter { $0.blockedUntil(now: now) != nil }.count } }
}
