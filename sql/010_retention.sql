-- tokenbroker:no-transaction
-- tokenbroker schema, version 10: retention (issue 11). Rows past their configured age are
-- deleted in small batches by any replica (`tokenbroker purge`, and once a minute by `serve`).
-- A session's age counts from when it ended: revoked, or needs_reauth. NULL while active.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS ended_at timestamptz;
-- Filled in batches of 1,000 rows in key order, each committed on its own.
-- tokenbroker:batch
WITH batch AS (
    SELECT tenant_id, id FROM sessions
    WHERE (tenant_id, id) > (coalesce(($1::text[])[1], ''), coalesce(($1::text[])[2], ''))
    ORDER BY tenant_id, id LIMIT 1000),
filled AS (
    UPDATE sessions s SET ended_at = coalesce(s.revoked_at, s.last_refreshed_at, s.created_at) FROM batch
    WHERE s.tenant_id = batch.tenant_id AND s.id = batch.id AND s.state <> 'active' AND s.ended_at IS NULL)
SELECT ARRAY[tenant_id, id]::text AS cursor FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1;
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_ended ON sessions (tenant_id, ended_at) WHERE state <> 'active';
CREATE INDEX IF NOT EXISTS signout_jobs_finished ON signout_jobs (tenant_id, finished_at) WHERE state = 'done';
-- Events no tenant owns (API keys, tenants) are purged too.
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_without_tenant ON audit_events (at) WHERE tenant_id IS NULL;
