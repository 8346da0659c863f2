-- tokenbroker schema, version 23: audit events about a client rather than a session (app-token
-- hand-outs and grants, RFC 6749 §4.4) name it; NULL for every other event.
ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS client_id text;
