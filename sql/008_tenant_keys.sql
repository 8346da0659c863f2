-- tokenbroker schema, version 8: the tenant in every key (spec §3).

-- Outbox entries and sign-out jobs are found by (tenant, id), like sessions: a lookup names
-- its tenant, and the primary key is the one index that fits it whatever the statistics say
-- (an id-only key let the planner read a tenant's whole outbox through the by-session index).
-- The outbox is a queue: its statistics are usually those of an empty table, whatever it holds
-- when a burst arrives. Its key leads with the id, and the by-session index with the session,
-- so that no index serves "the tenant's entries" alone: settling entries by id reads the key.
ALTER TABLE revocation_outbox DROP CONSTRAINT revocation_outbox_pkey;
ALTER TABLE revocation_outbox ADD PRIMARY KEY (id, tenant_id);
DROP INDEX revocation_outbox_by_session;
CREATE INDEX revocation_outbox_by_session ON revocation_outbox (session_id, tenant_id);

ALTER TABLE signout_items DROP CONSTRAINT signout_items_job_id_fkey;
ALTER TABLE signout_jobs DROP CONSTRAINT signout_jobs_pkey;
ALTER TABLE signout_jobs ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE signout_items ADD FOREIGN KEY (tenant_id, job_id) REFERENCES signout_jobs (tenant_id, id) ON DELETE CASCADE;
