-- tokenbroker schema, version 5: refreshes that survive faults (spec §5).

-- The attempt in flight: written and committed before the IdP is called, cleared with its
-- outcome. While it stands nobody presents the session's refresh token again; an attempt
-- whose outcome never arrived is resolved (introspection or on_ambiguous_refresh), never
-- re-sent blindly.
ALTER TABLE sessions
    ADD COLUMN attempt_id          text,
    ADD COLUMN attempt_started_at  timestamptz,
    -- No IdP call for this session before then (backoff, Retry-After), whoever asks.
    ADD COLUMN backoff_until       timestamptz,
    -- Why the session is not active (invalid_grant, refresh_outcome_lost, id_token_rejected, ...).
    ADD COLUMN reason              text;

-- What a lost refresh becomes when the issuer offers no RFC 7662 introspection.
ALTER TABLE clients
    ADD COLUMN on_ambiguous_refresh text NOT NULL DEFAULT 'fail_closed'
        CHECK (on_ambiguous_refresh IN ('fail_closed', 'retry'));
