-- tokenbroker schema, version 16: a client's security profile — standard, or fapi2 (the FAPI 2.0
-- Security Profile's client requirements, checked at registration and at every login).
ALTER TABLE clients ADD COLUMN IF NOT EXISTS profile text NOT NULL DEFAULT 'standard'
    CHECK (profile IN ('standard', 'fapi2'));
