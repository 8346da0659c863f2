-- tokenbroker schema, version 22: app tokens, a client's own tokens from the client-credentials
-- grant (RFC 6749 §4.4), shared by every replica: one row per tenant, client and ask (`id`:
-- the client and the normalized scope/audience/resource asked for). The access token and the
-- DPoP key are sealed like a session's (AES-256-GCM, additional data binding tenant and row).
-- A client can be disabled: it keeps its registration, and gets no app token.
CREATE TABLE IF NOT EXISTS app_tokens (
    tenant_id       text NOT NULL,
    id              text NOT NULL,
    client_id       text NOT NULL,
    scopes_asked    text[] NOT NULL DEFAULT '{}',
    audience        text,
    resource        text,
    access_token    bytea,              -- sealed; NULL: none to hand out (not granted yet, or dropped)
    token_type      text NOT NULL DEFAULT 'Bearer' CHECK (token_type IN ('Bearer', 'DPoP')),
    scopes          text[] NOT NULL DEFAULT '{}',
    expires_at      timestamptz,
    lifetime        double precision,   -- seconds, from the grant's expires_in
    renew_at        timestamptz,        -- when a token in use is renewed (the refresh policy's lead)
    dpop_key        bytea,              -- sealed
    version         bigint NOT NULL DEFAULT 0,
    granted_at      timestamptz,
    last_used_at    timestamptz,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS app_tokens_by_client ON app_tokens (tenant_id, client_id);
CREATE INDEX IF NOT EXISTS app_tokens_due ON app_tokens (renew_at) WHERE access_token IS NOT NULL;

ALTER TABLE clients ADD COLUMN IF NOT EXISTS disabled boolean NOT NULL DEFAULT false;
