import BrokerCore
import Foundation
import Synchronization

/// ChangeFeedContract: what one replica publishes, every replica's subscriber hears, whole and
/// under the tenant it was published for (a change of one tenant never reaches another's as its
/// own); the publishing replica's subscriber has it before `publish` returns.
///
/// `feed` and `replica` are two replicas' feeds over one transport; a feed that is one
/// replica's only (in process) is passed as both. A change may arrive twice (handlers are
/// idempotent), so what is heard is compared once each, in the order first heard.
public enum ChangeFeedContract {
    /// What a subscriber heard of this run: changes of the two tenants and of its probe key.
    final class Heard: Sendable {
        private let changes = Mutex<[Change]>([])
        let tenants: (String, String)
        let probe: String
        init(tenants: (String, String), probe: String) { self.tenants = tenants; self.probe = probe }

        func hear(_ c: Change) {
            guard Self.tenant(of: c).map({ $0 == tenants.0 || $0 == tenants.1 }) ?? (c == .apiKey(id: probe)) else { return }
            changes.withLock { $0.append(c) }
        }

        /// The changes heard for `tenant`, each once, in the order first heard.
        func of(_ tenant: String) -> [Change] {
            var seen: [Change] = []
            for c in changes.withLock({ $0 }) where Self.tenant(of: c) == tenant && !seen.contains(c) { seen.append(c) }
            return seen
        }

        func contains(_ c: Change) -> Bool { changes.withLock { $0.contains(c) } }

        static func tenant(of c: Change) -> String? {
            switch c {
            case .session(let t, _), .client(let t, _), .tenant(let t), .subject(let t, _, _), .endUser(let t, _, _), .scheduled(let t, _, _, _, _),
                 .dpopNonce(let t, _): t
            case .apiKey, .resync: nil
            }
        }
    }

    /// Every kind of change that names a tenant, for `tenant`; a subject and an end user with
    /// the payload separator in them, an instant with a fraction of a second.
    static func samples(_ tenant: String) -> [Change] {
        [.session(tenant: tenant, id: "ses_1"), .client(tenant: tenant, id: "app"), .tenant(tenant),
         .subject(tenant: tenant, client: "app", subject: "alice|admin"),
         .endUser(tenant: tenant, client: "app", endUser: "user|7 — Zoë"),
         .scheduled(tenant: tenant, id: "ses_1", client: "app", at: Contract.t0.addingTimeInterval(0.25), version: 7),
         .scheduled(tenant: tenant, id: "ses_2", client: "app", at: nil, version: nil), .dpopNonce(tenant: tenant, client: "app")]
    }

    public static func run(_ feed: any ChangeFeed, replica: any ChangeFeed, tenants: (String, String), within: TimeInterval = 10) throws {
        let probe = Contract.unique("probe")
        let mine = Heard(tenants: tenants, probe: probe), theirs = Heard(tenants: tenants, probe: probe)
        let oneReplica = (feed as AnyObject) === (replica as AnyObject)
        feed.subscribe { mine.hear($0) }
        if !oneReplica { replica.subscribe { theirs.hear($0) } }
        let other = oneReplica ? mine : theirs
        let deadline = Date().addingTimeInterval(within)
        func wait(until done: () -> Bool) { while !done(), Date() < deadline { Thread.sleep(forTimeInterval: 0.02) } }

        // The other replica listens once a probe comes through (it may start listening later).
        wait { feed.publish(.apiKey(id: probe)); return other.contains(.apiKey(id: probe)) }
        try Contract.expect(other.contains(.apiKey(id: probe)), "the other replica never heard a change")

        let own = Change.session(tenant: tenants.0, id: Contract.unique("ses"))
        feed.publish(own)
        try Contract.expect(mine.contains(own), "the publishing replica's subscriber did not have its change when publish returned")

        let a = samples(tenants.0), b = samples(tenants.1)
        for (x, y) in zip(a, b) { feed.publish(x); feed.publish(y) }
        wait { other.of(tenants.0).count >= a.count + 1 && other.of(tenants.1).count >= b.count }
        try Contract.expect(other.of(tenants.0) == [own] + a, "the other replica heard \(other.of(tenants.0)) for the first tenant, not \([own] + a)")
        try Contract.expect(other.of(tenants.1) == b, "the other replica heard \(other.of(tenants.1)) for the second tenant, not \(b)")
        try Contract.expect(mine.of(tenants.1) == b, "the publishing replica heard \(mine.of(tenants.1)) for the second tenant, not \(b)")
    }
}
