import BrokerCore
import Foundation

/// AuditLogContract: what the sink records is read back within its tenant, newest first,
/// filtered and paged; identical events of one flush are one row with their count, whichever
/// threads recorded them. Events about a client (app tokens) are kept apart per client and found
/// by it.
public enum AuditLogContract {
    public static func run(_ sink: any AuditSink, log: any AuditLog, tenants: (String, String)) throws {
        let session = Contract.unique("ses")
        let recorded = DispatchGroup()
        for _ in 0..<8 {   // eight threads, as HTTP threads record hand-outs
            recorded.enter()
            Thread {
                sink.record(AuditEvent(at: Contract.t0, actor: "k1", action: .tokenIssue, tenant: tenants.0, session: session, outcome: "ok"))
                recorded.leave()
            }.start()
        }
        recorded.wait()
        sink.record(AuditEvent(at: Contract.t0.addingTimeInterval(1), actor: "k1", action: .sessionRevoke, tenant: tenants.0, session: session, outcome: "ok"))
        sink.record(AuditEvent(at: Contract.t0, actor: "k2", action: .tokenIssue, tenant: tenants.1, session: session, outcome: "ok"))
        sink.flush()
        let all = try log.events(tenant: tenants.0, matching: AuditQuery(session: session))
        try Contract.expect(all.records.map(\.event.action) == [.sessionRevoke, .tokenIssue], "the tenant's events are not newest first")
        try Contract.expect(all.records.last?.count == 8, "identical events were not counted in one row")
        try Contract.expect(all.records.allSatisfy { $0.event.tenant == tenants.0 && $0.event.actor == "k1" }, "the audit trail crosses tenants")
        let page = try log.events(tenant: tenants.0, matching: AuditQuery(session: session, limit: 1))
        let rest = try log.events(tenant: tenants.0, matching: AuditQuery(session: session, limit: 1, before: page.next))
        try Contract.expect(page.records.count == 1 && rest.records.map(\.event.action) == [.tokenIssue], "the trail does not page")
        let filtered = try log.events(tenant: tenants.1, matching: AuditQuery(action: .tokenIssue, session: session))
        try Contract.expect(filtered.records.count == 1 && filtered.records[0].event.actor == "k2", "the other tenant's trail is wrong")
        let client = Contract.unique("app")
        for c in [client, client, client + "-other"] {
            sink.record(AuditEvent(at: Contract.t0, actor: "k1", action: .appTokenIssue, tenant: tenants.0, session: nil, outcome: "stored", client: c))
        }
        sink.flush()
        let byClient = try log.events(tenant: tenants.0, matching: AuditQuery(client: client))
        try Contract.expect(byClient.records.count == 1 && byClient.records[0].count == 2 && byClient.records[0].event.client == client
                            && byClient.records[0].event.action == .appTokenIssue, "a client's events are not one row of their own, found by the client")
    }
}
