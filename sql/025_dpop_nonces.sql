-- tokenbroker schema, version 25: each client's current DPoP nonce at its authorization server
-- (RFC 9449 §8), shared by every replica: the last DPoP-Nonce any of the server's endpoints
-- sent (token, pushed authorization request, revocation), and which one. Written only when it
-- changes; a replica reads it on a client's first use and when the change feed says so.
CREATE TABLE IF NOT EXISTS dpop_nonces (
    tenant_id    text NOT NULL,
    client_id    text NOT NULL,
    issuer       text NOT NULL,
    nonce        text NOT NULL,
    learned_from text NOT NULL,
    learned_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, client_id),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, id) ON DELETE CASCADE
);
