-- tokenbroker schema, version 24: a client's upstream, where the outbound proxy sends its calls
-- (the API's base URL) and how (private addresses allowed, a bare 401 meaning a dead token,
-- waiting out rate limits). Compact JSON; NULL: none set here (the provider descriptor's applies).
ALTER TABLE clients ADD COLUMN IF NOT EXISTS upstream text;
