-- tokenbroker:no-transaction
-- tokenbroker schema, version 20: the application's own id of its user (`end_user`), beside the
-- provider's subject. Given when a login starts (kept with the pending login until its
-- callback stores the session) or when a grant is imported; NULL when none was.
--
-- Adding a nullable column without a default changes the catalogue only: no table rewrite. The
-- length checks are NOT VALID: they hold for every row written from now on and read no
-- existing row (all of which are NULL). The broker enforces the whole rule (EndUser.swift).
ALTER TABLE logins ADD COLUMN IF NOT EXISTS end_user text CHECK (octet_length(end_user) BETWEEN 1 AND 255);
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS end_user text;
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_end_user_length,
    ADD CONSTRAINT sessions_end_user_length CHECK (octet_length(end_user) BETWEEN 1 AND 255) NOT VALID;

-- Token lookups by (tenant, client, end user): the three equalities lead, then creation order
-- for "the most recent" (as sessions_by_subject). end_user before client_id, so that a
-- sign-out job by end user alone is served by the same index's prefix. Partial:
-- sessions without an end user (most, in installations that never give one) are not indexed.
--
-- Built concurrently: writers of sessions go on while the build scans the table.
CREATE INDEX CONCURRENTLY IF NOT EXISTS sessions_by_end_user ON sessions (tenant_id, end_user, client_id, created_at DESC)
    WHERE end_user IS NOT NULL;
