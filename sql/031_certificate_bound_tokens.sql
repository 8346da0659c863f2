-- tokenbroker schema, version 31: certificate-bound access tokens (RFC 8705 §3). A session
-- whose access token the provider bound to the client's TLS certificate keeps that
-- certificate's SHA-256 thumbprint (the token's cnf.x5t#S256); a client may let its workers have
-- such tokens (they hold the same certificate); the client certificate's expiry warnings
-- (webhook client.certificate_expiring) remember the last threshold told, in days, for the
-- certificate of that thumbprint. Nullable or defaulted columns: added without rewriting a table.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS access_token_x5t text;
ALTER TABLE clients ADD COLUMN IF NOT EXISTS hand_out_certificate_bound boolean NOT NULL DEFAULT false;
ALTER TABLE clients ADD COLUMN IF NOT EXISTS tls_client_certificate_notified_days integer;
