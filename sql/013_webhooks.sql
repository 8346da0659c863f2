-- tokenbroker:no-transaction
-- tokenbroker schema, version 13: signed webhooks (issue 12), Standard Webhooks shape.
-- An endpoint is a tenant's URL subscribed to event types, with a signing secret (sealed,
-- bound to webhooks/<tenant>/<id>/secret) and, while a rotation overlaps, the previous one.
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id               text NOT NULL,
    url              text NOT NULL,
    events           text[] NOT NULL,
    secret           bytea NOT NULL,     -- sealed
    previous_secret  bytea,              -- sealed; signs too until previous_until
    previous_until   timestamptz,
    created_at       timestamptz NOT NULL,
    deleted_at       timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- An event is written in the transaction that caused it (a session's state change, a job's
-- end), once per event and only when an endpoint of the tenant subscribes to its type; each
-- subscribed endpoint gets a delivery in the same statement. `seq` orders a session's events.
CREATE TABLE IF NOT EXISTS webhook_events (
    tenant_id     text NOT NULL,
    id            text NOT NULL,
    seq           bigserial,
    type          text NOT NULL,
    ordering_key  text NOT NULL,        -- the session (or job) whose events are delivered in order
    payload       text NOT NULL,        -- the exact JSON body that is signed
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
-- Retention deletes a tenant's oldest events first (TOKENBROKER_RETENTION_WEBHOOK_DAYS).
CREATE INDEX IF NOT EXISTS webhook_events_by_age ON webhook_events (tenant_id, created_at);

-- Deliveries: at least once, in order per (endpoint, ordering key) — a delivery is claimed
-- only when no earlier one of its endpoint and key is still pending — by any replica
-- (FOR UPDATE SKIP LOCKED, with a lease), with backoff, until delivered or given up.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    tenant_id        text NOT NULL,
    endpoint_id      text NOT NULL,
    event_id         text NOT NULL,
    seq              bigint NOT NULL,
    ordering_key     text NOT NULL,
    state            text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL,
    last_status      integer,
    last_error       text,
    delivered_at     timestamptz,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, endpoint_id, event_id),
    FOREIGN KEY (tenant_id, event_id) REFERENCES webhook_events (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_order ON webhook_deliveries (tenant_id, endpoint_id, ordering_key, seq) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_log ON webhook_deliveries (tenant_id, endpoint_id, seq DESC);

-- session.grant_expiring is sent once per grant: the session remembers it was.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS grant_expiry_notified_at timestamptz;
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_grant_expiring ON sessions (grant_expires_at)
    WHERE state = 'active' AND grant_expiry_notified_at IS NULL;
