-- tokenbroker schema, version 11: a client certificate can stand for a principal on an mTLS
-- listener (issue 11). The certificate's SHA-256 (lowercase hex); such a key's secret is never shown.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS certificate_sha256 text;
CREATE UNIQUE INDEX IF NOT EXISTS api_keys_by_certificate ON api_keys (certificate_sha256) WHERE certificate_sha256 IS NOT NULL;
