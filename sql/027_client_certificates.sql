-- tokenbroker schema, version 27: mutual TLS client authentication (RFC 8705 §2). A client
-- registered with tls_client_auth or self_signed_tls_client_auth presents its certificate to its
-- provider: the chain and private key are sealed like the client secret (AES-256-GCM, additional
-- data binding tenant and client); the leaf's SHA-256 thumbprint (x5t#S256), subject and
-- notAfter are kept in clear for the client view and the expiry gauge. Nullable columns without
-- a default: added without rewriting the table.
ALTER TABLE clients ADD COLUMN IF NOT EXISTS tls_client_credential bytea;
ALTER TABLE clients ADD COLUMN IF NOT EXISTS tls_client_certificate_sha256 text;
ALTER TABLE clients ADD COLUMN IF NOT EXISTS tls_client_certificate_subject text;
ALTER TABLE clients ADD COLUMN IF NOT EXISTS tls_client_certificate_not_after timestamptz;

-- The two methods join the allowed ones (the check of version 1, by its default name).
ALTER TABLE clients DROP CONSTRAINT IF EXISTS clients_auth_method_check;
ALTER TABLE clients ADD CONSTRAINT clients_auth_method_check CHECK (auth_method IN ('none', 'client_secret_basic', 'client_secret_post',
    'private_key_jwt', 'tls_client_auth', 'self_signed_tls_client_auth'));
