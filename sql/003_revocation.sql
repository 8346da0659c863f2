-- tokenbroker:no-transaction
-- tokenbroker schema, version 3: revocation (spec §4.3) and the admin listings.

-- Tokens of revoked sessions still to be revoked at the IdP (RFC 7009). Written in the same
-- transaction that marks the session revoked and erases its token material, so a revocation
-- is never lost: every replica delivers due rows (FOR UPDATE SKIP LOCKED, with a lease) until
-- the IdP confirms. The token is sealed, bound to revocations/<tenant>/<id>/token.
CREATE TABLE IF NOT EXISTS revocation_outbox (
    id              text PRIMARY KEY,
    tenant_id       text NOT NULL,
    session_id      text NOT NULL,
    client_id       text NOT NULL,
    token           bytea NOT NULL,     -- sealed
    hint            text NOT NULL CHECK (hint IN ('refresh_token', 'access_token')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_error      text,
    created_at      timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS revocation_outbox_due ON revocation_outbox (next_attempt_at);
CREATE INDEX IF NOT EXISTS revocation_outbox_by_session ON revocation_outbox (tenant_id, session_id);

ALTER TABLE sessions ADD COLUMN IF NOT EXISTS revoked_at timestamptz;

-- Keyset pagination of a tenant's sessions, newest first.
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_by_created ON sessions (tenant_id, created_at DESC, id DESC);
-- Keyset pagination of a tenant's audit trail, newest first.
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_by_tenant_id ON audit_events (tenant_id, id DESC);
