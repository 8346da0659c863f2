/// RefreshOutcome is what came of presenting a refresh token: the IdP's grant with the verdict
/// on its ID token, or why there is none.
public enum RefreshOutcome: Sendable, Equatable {
    case granted(TokenGrant, idToken: IDTokenVerdict)
    case failed(TokenEndpointError)
}

/// IDTokenVerdict is the check of the ID token that came with a refresh (OIDC Core §12.2).
public enum IDTokenVerdict: Sendable, Equatable {
    /// Valid, or none came.
    case valid
    /// Forged, for someone else, or otherwise wrong: nothing of the answer may be used.
    case rejected(String)
    /// The issuer's keys could not be had (even after a re-fetch): the answer cannot be
    /// trusted yet, and its refresh token must not be lost either.
    case keysUnavailable
}

/// AttemptEvidence is what is known about an attempt whose outcome never arrived.
public enum AttemptEvidence: Sendable, Equatable {
    /// RFC 7662 introspection says the presented refresh token is still active: the IdP did
    /// not act on it.
    case active
    /// Introspection says it is not active: the IdP rotated it, and the answer was lost.
    case inactive
    /// The issuer offers no introspection: the client's `on_ambiguous_refresh` decides.
    case noIntrospection
    /// Introspection could not be had right now: decide later.
    case unknown(String)
}
