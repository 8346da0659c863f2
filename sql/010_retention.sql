-- tokenbroker schema, version 10: retention (issue 11). Rows past their configured age are
-- deleted in small batches by any replica (`tokenbroker purge`, and once a minute by `serve`).
-- A session's age counts from when it ended: revoked, or needs_reauth. NULL while active.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS ended_at timestamptz;
UPDATE sessions SET ended_at = coalesce(revoked_at, last_refreshed_at, created_at)
    WHERE state <> 'active' AND ended_at IS NULL;
CREATE INDEX IF NOT EXISTS sessions_ended ON sessions (tenant_id, ended_at) WHERE state <> 'active';
CREATE INDEX IF NOT EXISTS signout_jobs_finished ON signout_jobs (tenant_id, finished_at) WHERE state = 'done';
-- Events no tenant owns (API keys, tenants) are purged too.
CREATE INDEX IF NOT EXISTS audit_without_tenant ON audit_events (at) WHERE tenant_id IS NULL;
