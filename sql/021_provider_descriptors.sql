-- tokenbroker schema, version 21: any OAuth 2.0 provider. A client's provider descriptor (the
-- catalogue entry it was registered from, and the checked descriptor as compact JSON; NULL: an
-- OpenID provider found by discovery), and the members of a provider's token answer a session
-- keeps (its descriptor's token_response.keep, a JSON object; never tokens). Nullable columns
-- without a default: added without rewriting either table.
ALTER TABLE clients ADD COLUMN IF NOT EXISTS provider text;
ALTER TABLE clients ADD COLUMN IF NOT EXISTS descriptor text;
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS metadata text;
