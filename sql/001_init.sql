-- tokenbroker schema, version 1 (spec §3). Every table that holds user data carries tenant_id
-- and every query filters on it. Token material is stored sealed (AES-256-GCM, bytea), never
-- in plain text; API keys are stored as SHA-256 of their secret.

CREATE TABLE tenants (
    id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text NOT NULL,
    disabled    boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE clients (
    tenant_id               text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                      text NOT NULL CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    issuer                  text NOT NULL,
    client_id               text NOT NULL,
    auth_method             text NOT NULL CHECK (auth_method IN ('none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt')),
    client_secret           bytea,          -- sealed
    redirect_uri            text NOT NULL,
    scopes                  text[] NOT NULL,
    redirect_after_allowed  text[] NOT NULL DEFAULT '{}',
    refresh_policy          jsonb NOT NULL DEFAULT '{}',
    max_concurrent_refreshes integer NOT NULL DEFAULT 8 CHECK (max_concurrent_refreshes > 0),
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE sessions (
    tenant_id           text NOT NULL,
    id                  text NOT NULL,
    client_id           text NOT NULL,
    subject             text NOT NULL,
    issuer              text NOT NULL,
    scopes              text[] NOT NULL,
    sid                 text,
    email               text,
    auth_time           timestamptz,
    access_token        bytea,              -- sealed
    access_expires_at   timestamptz,
    access_lifetime     double precision,   -- seconds, from the last expires_in
    refresh_token       bytea,              -- sealed
    id_token            bytea,              -- sealed
    state               text NOT NULL CHECK (state IN ('active', 'needs_reauth', 'revoked')),
    next_refresh_at     timestamptz,
    version             bigint NOT NULL,
    failure_count       integer NOT NULL DEFAULT 0,
    last_error          text,
    granted_at          timestamptz NOT NULL,
    created_at          timestamptz NOT NULL,
    last_used_at        timestamptz,
    last_refreshed_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX sessions_by_subject ON sessions (tenant_id, client_id, subject, created_at DESC);
CREATE INDEX sessions_due ON sessions (next_refresh_at) WHERE state = 'active';

CREATE TABLE api_keys (
    id           text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
    name         text NOT NULL,
    roles        text[] NOT NULL,
    tenants      text[] NOT NULL,           -- '*' reaches every tenant
    secret_hash  bytea NOT NULL,            -- SHA-256 of the secret, never the secret
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- Identical events (same actor, action, tenant, session, outcome) within one flush window of a
-- replica are one row: `count` of them between `at` and `last_at`. Every token hand-out is
-- still accounted for, at one write per window instead of one per hand-out.
CREATE TABLE audit_events (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL,
    last_at     timestamptz NOT NULL,
    count       integer NOT NULL DEFAULT 1 CHECK (count > 0),
    actor       text NOT NULL,
    action      text NOT NULL,
    tenant_id   text,
    session_id  text,
    outcome     text NOT NULL
);
CREATE INDEX audit_by_tenant ON audit_events (tenant_id, at);
