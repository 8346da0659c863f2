-- tokenbroker schema, version 19: a client's own trust anchors — CA certificates (PEM) that its
-- provider connections trust instead of the deployment's CA file. NULL: the deployment's trust.
ALTER TABLE clients ADD COLUMN IF NOT EXISTS trust_anchors text;
