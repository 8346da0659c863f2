-- tokenbroker schema, version 17: the broker's own signing keys (RFC 8693 actor tokens naming the
-- calling worker), published at /.well-known/jwks.json on the public listener. One key is
-- current (retired_at NULL), made by whichever replica needs it first; its private half is
-- sealed like tokens (context broker_keys/broker/<kid>/private_key: `scope` is the key's owner,
-- the broker itself, so that the reseal walk names the row by two columns like every other).
CREATE TABLE IF NOT EXISTS broker_keys (
    kid         text PRIMARY KEY,
    scope       text NOT NULL DEFAULT 'broker' CHECK (scope = 'broker'),
    alg         text NOT NULL CHECK (alg IN ('ES256', 'PS256')),
    private_key bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    retired_at  timestamptz
);
CREATE UNIQUE INDEX IF NOT EXISTS broker_keys_one_current ON broker_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
