-- tokenbroker schema, version 7: refresh in proportion to use (spec §5).

-- When the IdP ends the grant whatever happens: from the client's grant_lifetime (counted from
-- the sign-in, or from each refresh when it rolls), written with every refresh. Rows written
-- before this version had one broker-wide lifetime, 7 days by default (only active rows need
-- the value: the others are never refreshed again).
ALTER TABLE sessions ADD COLUMN grant_expires_at timestamptz;
UPDATE sessions SET grant_expires_at = granted_at + interval '7 days' WHERE state = 'active';
-- The near-expiry count of the refresh engine reads a range of this index, not the table.
CREATE INDEX sessions_grant_expiry ON sessions (grant_expires_at) WHERE state = 'active';
