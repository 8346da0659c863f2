-- tokenbroker schema, version 12: API keys rotate with an overlap (issue 11). A rotated key's
-- previous secret is still accepted until previous_until, then only the new one.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS previous_secret_hash bytea;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS previous_until timestamptz;
