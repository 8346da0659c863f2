-- tokenbroker schema, version 4: bulk sign-out jobs (spec §4.3).

-- A job is its filter, its counts and its items: the sessions that matched when it was
-- created, snapshotted in the same transaction. Items are claimed in batches with
-- FOR UPDATE SKIP LOCKED by any replica; a replica that dies mid-batch rolls back and another
-- takes the batch again (revoking a revoked session changes nothing), so a job survives crashes
-- and its counts, derived from the items, are exact.
CREATE TABLE signout_jobs (
    id               text PRIMARY KEY,
    tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    filter           jsonb NOT NULL,
    dry_run          boolean NOT NULL,
    state            text NOT NULL CHECK (state IN ('running', 'done')),
    total            integer NOT NULL,
    revoked          integer NOT NULL DEFAULT 0,
    failed           integer NOT NULL DEFAULT 0,
    created_by       text NOT NULL,
    idempotency_key  text,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    UNIQUE (tenant_id, idempotency_key)
);

CREATE TABLE signout_items (
    job_id      text NOT NULL REFERENCES signout_jobs (id) ON DELETE CASCADE,
    tenant_id   text NOT NULL,
    session_id  text NOT NULL,
    client_id   text NOT NULL,
    -- revoked: here (the IdP's confirmation is the revocation outbox's business: a job shows
    -- how many of its sessions still wait for it); failed: could not be revoked.
    state       text NOT NULL CHECK (state IN ('pending', 'revoked', 'failed')),
    PRIMARY KEY (job_id, session_id)
);
CREATE INDEX signout_items_pending ON signout_items (job_id) WHERE state = 'pending';

-- Back-channel logout tokens already accepted (OpenID Connect Back-Channel Logout 1.0 §2.6
-- step 7: a jti is used once), kept until their iat is too old to be accepted anyway.
CREATE TABLE seen_token_ids (
    issuer      text NOT NULL,
    jti         text NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (issuer, jti)
);
