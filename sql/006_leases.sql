-- tokenbroker schema, version 6: no IdP call inside a transaction (spec §4.3).

-- A sign-out item is claimed with a lease that is committed before its session is revoked
-- (here and at the IdP), and its outcome is written in a second short transaction. A replica
-- that dies meanwhile holds nothing open: the lease runs out and another replica claims the
-- item again (revoking a revoked session changes nothing).
-- The claim's id goes with the lease: only the claimer whose lease still stands records an
-- outcome (a replica whose lease ran out cannot overwrite the one that took the item over).
ALTER TABLE signout_items ADD COLUMN lease_until timestamptz, ADD COLUMN lease_id text;
DROP INDEX signout_items_pending;
CREATE INDEX signout_items_pending ON signout_items (job_id, session_id) WHERE state = 'pending';
