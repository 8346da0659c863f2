-- tokenbroker:no-transaction
-- tokenbroker schema, version 7: refresh in proportion to use (spec §5).

-- When the IdP ends the grant whatever happens: from the client's grant_lifetime (counted from
-- the sign-in, or from each refresh when it rolls), written with every refresh. Rows written
-- before this version had one broker-wide lifetime, 7 days by default (only active rows need
-- the value: the others are never refreshed again).
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS grant_expires_at timestamptz;
-- Filled in batches of 1,000 rows in key order, each committed on its own.
-- tokenbroker:batch
WITH batch AS (
    SELECT tenant_id, id FROM sessions
    WHERE (tenant_id, id) > (coalesce(($1::text[])[1], ''), coalesce(($1::text[])[2], ''))
    ORDER BY tenant_id, id LIMIT 1000),
filled AS (
    UPDATE sessions s SET grant_expires_at = s.granted_at + interval '7 days' FROM batch
    WHERE s.tenant_id = batch.tenant_id AND s.id = batch.id AND s.state = 'active' AND s.grant_expires_at IS NULL)
SELECT ARRAY[tenant_id, id]::text AS cursor FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1;
-- The near-expiry count of the refresh engine reads a range of this index, not the table.
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_grant_expiry ON sessions (grant_expires_at) WHERE state = 'active';
