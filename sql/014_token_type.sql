-- tokenbroker schema, version 14: the access token's token_type as the IdP named it (RFC 6749
-- §5.1), handed out as it is: a DPoP-bound token (RFC 9449) is never relabelled Bearer.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS access_token_type text NOT NULL DEFAULT 'Bearer'
    CHECK (access_token_type IN ('Bearer', 'DPoP'));
