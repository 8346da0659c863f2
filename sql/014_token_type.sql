-- tokenbroker:no-transaction
-- tokenbroker schema, version 14: the access token's token_type as the IdP named it (RFC 6749
-- §5.1), handed out as it is: a DPoP-bound token (RFC 9449) is never relabelled Bearer.
--
-- A constant default is kept in the catalogue (no table rewrite); the check is added NOT VALID
-- (no scan under the ALTER's lock) and validated afterwards, which reads the table without
-- blocking its writers. The check keeps the name PostgreSQL gives a column's own check.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS access_token_type text NOT NULL DEFAULT 'Bearer';
ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_access_token_type_check,
    ADD CONSTRAINT sessions_access_token_type_check CHECK (access_token_type IN ('Bearer', 'DPoP')) NOT VALID;
ALTER TABLE sessions VALIDATE CONSTRAINT sessions_access_token_type_check;
