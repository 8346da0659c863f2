-- tokenbroker schema, version 15: DPoP (RFC 9449). A client may bind its sessions' tokens to a
-- key per session (dpop_alg, NULL for bearer tokens); the key is made when the login starts,
-- kept sealed with the pending login and then with the session, the same one for every refresh.
ALTER TABLE clients ADD COLUMN IF NOT EXISTS dpop_alg text CHECK (dpop_alg IN ('ES256', 'PS256'));
ALTER TABLE logins ADD COLUMN IF NOT EXISTS dpop_key bytea;
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS dpop_key bytea;
