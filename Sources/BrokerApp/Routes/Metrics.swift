import Broker
import BrokerCore

/// Metrics renders the Prometheus text exposition format (version 0.0.4).
enum Metrics {
    /// A label value escaped as the exposition format says (backslash, quote, newline).
    static func label(_ v: String) -> String {
        v.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }

    static func render(_ runtime: BrokerRuntime) -> String {
        let m = runtime.tokens.metrics
        var out = ""
        func histogram(_ name: String, _ help: String, _ bounds: [Double], _ series: [(labels: String, h: (cumulative: [Int], sum: Double, count: Int))]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
            for (labels, h) in series {
                for (b, c) in zip(bounds, h.cumulative) { out += "\(name)_bucket{\(labels),le=\"\(b)\"} \(c)\n" }
                out += "\(name)_bucket{\(labels),le=\"+Inf\"} \(h.count)\n\(name)_sum{\(labels)} \(h.sum)\n\(name)_count{\(labels)} \(h.count)\n"
            }
        }
        func counter(_ name: String, _ help: String, _ values: [String: Int], label: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
            for (k, v) in values.sorted(by: { $0.key < $1.key }) { out += "\(name){\(label)=\"\(k)\"} \(v)\n" }
        }
        counter("tokenbroker_token_requests_total", "Token requests by outcome.", m.tokenRequestsByOutcome, label: "outcome")
        out += "# HELP tokenbroker_refreshes_total Refresh attempts by client and outcome.\n# TYPE tokenbroker_refreshes_total counter\n"
        for (k, v) in m.refreshes.counts.sorted(by: { ($0.key.client.tenant, $0.key.client.client, $0.key.outcome) < ($1.key.client.tenant, $1.key.client.client, $1.key.outcome) }) {
            out += "tokenbroker_refreshes_total{outcome=\"\(k.outcome)\",tenant=\"\(label(k.client.tenant))\",client=\"\(label(k.client.client))\"} \(v)\n"
        }
        let apps = runtime.appTokens
        counter("tokenbroker_app_token_handouts_total", "App tokens handed out, by source: the stored token, or a grant the caller waited for.",
                ["stored": 0, "granted": 0].merging(apps.handOuts.counts) { $1 }, label: "source")
        counter("tokenbroker_app_token_grants_total", "Client-credentials grants at the IdP, by outcome (granted, or the error's code).",
                ["granted": 0].merging(apps.grants.counts) { $1 }, label: "outcome")
        counter("tokenbroker_app_token_renewals_total", "App tokens in use renewed ahead of expiry, by outcome (renewed; skipped: another replica renewed it first; or the error's code).",
                ["renewed": 0, "skipped": 0].merging(apps.renewals.counts) { $1 }, label: "outcome")
        let proxy = runtime.proxy.metrics
        out += "# HELP tokenbroker_proxy_calls_total Proxied calls by client, upstream host and outcome: the upstream's status class, or the broker's refusal code.\n# TYPE tokenbroker_proxy_calls_total counter\n"
        for (k, v) in proxy.calls.counts.sorted(by: { ($0.key.tenant, $0.key.client, $0.key.host, $0.key.outcome) < ($1.key.tenant, $1.key.client, $1.key.host, $1.key.outcome) }) {
            out += "tokenbroker_proxy_calls_total{tenant=\"\(label(k.tenant))\",client=\"\(label(k.client))\",host=\"\(label(k.host))\",outcome=\"\(k.outcome)\"} \(v)\n"
        }
        counter("tokenbroker_proxy_refreshes_total", "Forced refreshes after an upstream said the token was invalid, by outcome.",
                ["ok": 0, "failed": 0].merging(proxy.refreshesAfter401.counts) { $1 }, label: "outcome")
        out += "# HELP tokenbroker_proxy_rate_limited_total Proxied calls answered 429 from an upstream's Retry-After, without calling it.\n"
            + "# TYPE tokenbroker_proxy_rate_limited_total counter\ntokenbroker_proxy_rate_limited_total \(proxy.rateLimitedLocally.count)\n"
        out += "# HELP tokenbroker_proxy_in_flight Proxied calls admitted and not finished (running or waiting for a proxy thread).\n"
            + "# TYPE tokenbroker_proxy_in_flight gauge\ntokenbroker_proxy_in_flight \(proxy.inFlight.load(ordering: .relaxed))\n"
        counter("tokenbroker_refresh_client_rejected_total", "Refreshes on which the IdP rejected the client's authentication (invalid_client).",
                m.clientRejected.counts, label: "client")
        counter("tokenbroker_retention_deleted_total", "Rows deleted by retention, by kind.",
                Dictionary(uniqueKeysWithValues: RetentionKind.allCases.map { ($0.rawValue, runtime.retention.deleted.counts[$0.rawValue] ?? 0) }),
                label: "kind")
        if let sealed = runtime.sealing.lastCount {
            out += "# HELP tokenbroker_sealed_values Sealed values stored, by the key that sealed them (the fleet's count: one replica counts every ten minutes).\n# TYPE tokenbroker_sealed_values gauge\n"
            for (k, v) in sealed.sorted(by: { $0.key < $1.key }) { out += "tokenbroker_sealed_values{key=\"\(label(k))\"} \(v)\n" }
        }
        out += "# HELP tokenbroker_refresh_answers_pending IdP answers kept in memory until the database takes them.\n# TYPE tokenbroker_refresh_answers_pending gauge\n"
        out += "tokenbroker_refresh_answers_pending \(runtime.refresher.pendingAnswers)\n"
        out += "# HELP tokenbroker_client_circuits_open Clients whose IdP is not called now after failures.\n# TYPE tokenbroker_client_circuits_open gauge\n"
        out += "tokenbroker_client_circuits_open \(runtime.refresher.circuits.open(now: runtime.clock.now()))\n"
        out += "# HELP tokenbroker_cache_hits_total Tokens served from memory.\n# TYPE tokenbroker_cache_hits_total counter\n"
        out += "tokenbroker_cache_hits_total \(m.cacheHits.count)\n"
        out += "# HELP tokenbroker_lock_contention_total Callers whose wait for another holder of the session (its lock, or an attempt elsewhere) ran out.\n# TYPE tokenbroker_lock_contention_total counter\n"
        out += "tokenbroker_lock_contention_total \(m.lockContention.count)\n"
        histogram("tokenbroker_refresh_seconds", "IdP refresh latency, by client.", m.refreshLatency.bounds,
                  m.refreshLatency.snapshots.sorted { ($0.key.tenant, $0.key.client) < ($1.key.tenant, $1.key.client) }
                      .map { ("tenant=\"\(label($0.key.tenant))\",client=\"\(label($0.key.client))\"", $0.value) })
        histogram("tokenbroker_http_request_duration_seconds", "Request durations, by route and status class.", RequestMetrics.bounds,
                  runtime.requests.series.map { ("method=\"\($0.method)\",route=\"\(label($0.route))\",status=\"\($0.status)\"", $0.histogram) })
        counter("tokenbroker_webhook_deliveries_total", "Webhook delivery attempts, by outcome (delivered, failed and retried, given_up).",
                ["delivered": 0, "failed": 0, "given_up": 0].merging(runtime.webhooks.outcomes.counts) { $1 }, label: "outcome")
        counter("tokenbroker_outbox_unrecorded_total", "Outbox writes that failed after a delivery attempt (logged; the entry is tried again when its lease runs out), by outbox.",
                ["webhooks": runtime.webhooks.unrecorded.count, "revocations": runtime.revocations.unrecorded.count], label: "outbox")
        counter("tokenbroker_backchannel_logouts_total", "Back-channel logout tokens received, by outcome (revoked; refused; incomplete: a session could not be revoked, the IdP was answered an error and may send it again).",
                ["revoked": 0, "refused": 0, "incomplete": 0].merging(runtime.backchannel.outcomes.counts) { $1 }, label: "outcome")
        counter("tokenbroker_jwks_fetches_total", "Fetches of issuers' JWK Sets, by outcome.",
                ["ok": 0, "failed": 0].merging(runtime.jwks.fetches) { $1 }, label: "outcome")
        let links = runtime.providerHTTP.counts
        counter("tokenbroker_provider_connections_total", "Provider (IdP) exchanges by connection: opened for it, or reused.",
                ["opened": links.opened, "reused": links.reused], label: "kind")
        counter("tokenbroker_provider_tls_handshakes_total", "TLS handshakes with providers: full, or resuming an earlier session.",
                ["full": links.fullHandshakes, "resumed": links.resumedHandshakes], label: "kind")
        counter("tokenbroker_provider_ca_reloads_total", "Reads of TOKENBROKER_PROVIDER_CA_FILE after it changed, by outcome (failed: the last good bundle stays).",
                ["ok": links.caReloads, "failed": links.caLoadFailures], label: "outcome")
        out += "# HELP tokenbroker_provider_idle_connections Provider connections kept idle for reuse.\n# TYPE tokenbroker_provider_idle_connections gauge\n"
        out += "tokenbroker_provider_idle_connections \(links.idle)\n"
        let backlog = runtime.backlog.last
        func backlogGauge(_ name: String, _ help: String, _ v: Double?) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(v.map { String($0) } ?? "NaN")\n"
        }
        backlogGauge("tokenbroker_revocation_outbox_depth", "Revocations the IdP has not confirmed yet, all replicas (counted every 15 s).",
                     backlog.map { Double($0.outboxDepth) })
        backlogGauge("tokenbroker_revocation_outbox_oldest_seconds", "Age of the oldest unconfirmed revocation (0 when none).",
                     backlog.map { $0.outboxOldest.map { max(0, runtime.clock.now().timeIntervalSince($0)) } ?? 0 })
        backlogGauge("tokenbroker_signout_jobs_running", "Bulk sign-out jobs not finished, all replicas.", backlog.map { Double($0.signoutJobsRunning) })
        // Written even without a series, so that its alert names an exposed metric.
        out += "# HELP tokenbroker_client_certificate_expiry_seconds Seconds until the client's TLS client certificate expires (negative after; counted every 15 s).\n"
            + "# TYPE tokenbroker_client_certificate_expiry_seconds gauge\n"
        let now = runtime.clock.now()
        for e in backlog?.clientCertificates ?? [] {
            out += "tokenbroker_client_certificate_expiry_seconds{tenant=\"\(label(e.tenant))\",client=\"\(label(e.client))\"} \(Int(e.notAfter.timeIntervalSince(now)))\n"
        }
        backlogGauge("tokenbroker_signout_items_pending", "Sessions of running sign-out jobs not yet revoked.", backlog.map { Double($0.signoutItemsPending) })
        func gauge(_ name: String, _ help: String, _ v: Int) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(v)\n"
        }
        let db = runtime.pool.usage
        gauge("tokenbroker_db_pool_connections", "PostgreSQL connections this replica holds open.", db.open)
        gauge("tokenbroker_db_pool_in_use", "PostgreSQL connections lent out now.", db.inUse)
        gauge("tokenbroker_db_pool_waiting", "Callers waiting for a PostgreSQL connection now.", db.waiting)
        gauge("tokenbroker_db_pool_size", "The most PostgreSQL connections this replica opens (TOKENBROKER_DB_POOL_SIZE).", db.size)
        // Written even before the first reading, so that the alert names an exposed metric.
        let replication = runtime.replication.last
        out += "# HELP tokenbroker_db_replication_mode The primary's replication mode (1 for the current one; none before the first reading, every 30 s).\n"
            + "# TYPE tokenbroker_db_replication_mode gauge\n"
        for mode in ReplicationMode.allCases where replication != nil {
            out += "tokenbroker_db_replication_mode{mode=\"\(mode.rawValue)\"} \(replication?.mode == mode ? 1 : 0)\n"
        }
        out += "# HELP tokenbroker_db_synchronous_standbys Connected standbys the primary's commits wait for (absent when the broker's role may not see them).\n"
            + "# TYPE tokenbroker_db_synchronous_standbys gauge\n"
        if let n = replication?.synchronousStandbys { out += "tokenbroker_db_synchronous_standbys \(n)\n" }
        gauge("tokenbroker_change_feed_alive", "1 while this replica's canary comes back through the change feed, 0 when one did not within 6 s (cached rows are then not served).",
              runtime.feedAlive ? 1 : 0)
        let prepared = runtime.pool.statements
        gauge("tokenbroker_db_prepared_statements", "Whether key lookups are prepared statements now: 1 on, 0 off (TOKENBROKER_DB_PREPARED_STATEMENTS, or turned off by a transaction pooler's answer).",
              prepared.enabled ? 1 : 0)
        gauge("tokenbroker_db_prepared_statements_turned_off", "1 when a transaction pooler's answer turned prepared statements off on this replica (set TOKENBROKER_DB_PREPARED_STATEMENTS=false).",
              prepared.switchedOffByPooler ? 1 : 0)
        let failover = runtime.failover, journal = failover.journalUsage
        out += "# HELP tokenbroker_database_server_changes_total Times this replica found its database on another server (another timeline or cluster: a failover or switchover).\n"
            + "# TYPE tokenbroker_database_server_changes_total counter\ntokenbroker_database_server_changes_total \(failover.serverChanges.count)\n"
        out += "# HELP tokenbroker_failover_writes_reapplied_total Refresh writes this replica committed that the new database server lacked after a change of server, re-applied.\n"
            + "# TYPE tokenbroker_failover_writes_reapplied_total counter\ntokenbroker_failover_writes_reapplied_total \(failover.reapplied.count)\n"
        out += "# HELP tokenbroker_failover_rotations_reapplied_total Of those, refresh-token rotations (the new server still held the spent token).\n"
            + "# TYPE tokenbroker_failover_rotations_reapplied_total counter\ntokenbroker_failover_rotations_reapplied_total \(failover.rotationsReapplied.count)\n"
        out += "# HELP tokenbroker_failover_tokens_revoked_total Refresh tokens this replica committed that the new server never received and whose session had ended there: revoked.\n"
            + "# TYPE tokenbroker_failover_tokens_revoked_total counter\ntokenbroker_failover_tokens_revoked_total \(failover.revokedAfterChange.count)\n"
        gauge("tokenbroker_failover_journal_entries", "Sessions whose latest refresh write this replica keeps, to re-apply after a failover (TOKENBROKER_FAILOVER_JOURNAL_*).", journal.entries)
        gauge("tokenbroker_failover_journal_bytes", "Bytes that journal holds, about.", journal.bytes)
        out += "# HELP tokenbroker_failover_journal_evicted_total Journal entries dropped before TOKENBROKER_FAILOVER_JOURNAL_SECONDS by its count or byte bound (a journal too small).\n"
            + "# TYPE tokenbroker_failover_journal_evicted_total counter\ntokenbroker_failover_journal_evicted_total \(journal.evictedEarly)\n"
        out += "# HELP tokenbroker_build_info The release this replica runs (always 1).\n# TYPE tokenbroker_build_info gauge\n"
        out += "tokenbroker_build_info{version=\"\(label(CLI.version))\"} 1\n"
        let process = ProcessStats.now()
        out += "# HELP process_cpu_seconds_total User and system CPU time.\n# TYPE process_cpu_seconds_total counter\n"
        out += "process_cpu_seconds_total \(process.cpuSeconds)\n"
        gauge("process_resident_memory_bytes", "Resident memory.", process.residentBytes)
        gauge("process_open_fds", "Open file descriptors.", process.openFDs)
        out += "# HELP process_start_time_seconds Start of the process, seconds since 1970.\n# TYPE process_start_time_seconds gauge\n"
        out += "process_start_time_seconds \(Int(ProcessStats.started.timeIntervalSince1970))\n"
        let load = runtime.engine.pool.load
        gauge("tokenbroker_cached_sessions", "Sessions held in memory.", runtime.tokens.cache.count)
        gauge("tokenbroker_timers_scheduled", "Sessions scheduled in this replica's timer wheel.", runtime.engine.scheduled.load(ordering: .relaxed))
        gauge("tokenbroker_refreshes_in_flight", "Timer-driven refreshes running now.", load.running)
        gauge("tokenbroker_refreshes_waiting", "Timer-driven refreshes waiting for a global or per-client cap.", load.waiting)
        gauge("tokenbroker_sessions_near_grant_expiry", "Active sessions within a day of the IdP's absolute refresh-token lifetime.",
              runtime.engine.nearGrantExpiry.load(ordering: .relaxed))
        return out
    }
}
