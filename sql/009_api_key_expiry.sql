-- tokenbroker schema, version 9: API keys that expire (issue 11). NULL: the key never expires.
-- A key past its expires_at is refused like a revoked one; `GET /v1/apikeys` shows it.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS expires_at timestamptz;
