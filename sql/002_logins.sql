-- tokenbroker schema, version 2: pending logins (spec §3, §4.2) and private_key_jwt client keys.

-- A pending authorization request. The callback knows only the state, so the state's SHA-256
-- is the key (the state itself is never stored); verifier and nonce are sealed (AES-256-GCM,
-- bound to logins/<tenant>/<id>/<column>). Single use: the callback deletes the row it reads.
CREATE TABLE logins (
    state_hash      bytea PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    tenant_id       text NOT NULL,
    client_id       text NOT NULL,
    issuer          text NOT NULL,
    verifier        bytea NOT NULL,     -- sealed
    nonce           bytea NOT NULL,     -- sealed
    scopes          text[] NOT NULL,
    redirect_after  text,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX logins_by_expiry ON logins (expires_at);

-- private_key_jwt: the broker's own key for the client (sealed DER) and its algorithm.
ALTER TABLE clients
    ADD COLUMN assertion_alg text CHECK (assertion_alg IN ('ES256', 'RS256', 'PS256')),
    ADD COLUMN assertion_key bytea;     -- sealed
