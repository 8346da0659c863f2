/// Misbehaviour is one way the development IdP can be told to misbehave, for one client, for
/// its next responses: every check the broker makes has a switch that breaks exactly it.
enum Misbehaviour: String, Sendable, CaseIterable {
    // Authorization response (the redirect to the callback).
    case wrongIssParam = "wrong_iss_param"
    case omitIssParam = "omit_iss_param"
    case accessDenied = "access_denied"
    // ID token in a token response.
    case idTokenBadSignature = "id_token_bad_signature"
    case idTokenAlgNone = "id_token_alg_none"
    case idTokenAlgHS256 = "id_token_alg_hs256"
    case idTokenUnknownKid = "id_token_unknown_kid"
    case idTokenWrongIss = "id_token_wrong_iss"
    case idTokenWrongAud = "id_token_wrong_aud"
    case idTokenMultiAudNoAzp = "id_token_multi_aud_no_azp"
    case idTokenMultiAudAzp = "id_token_multi_aud_azp"     // valid: several audiences, azp = client
    case idTokenWrongAzp = "id_token_wrong_azp"
    case idTokenExpired = "id_token_expired"
    case idTokenIatFuture = "id_token_iat_future"
    case idTokenWrongNonce = "id_token_wrong_nonce"
    case idTokenNoNonce = "id_token_no_nonce"
    case idTokenNoSub = "id_token_no_sub"
    case idTokenOtherSub = "id_token_other_sub"
    case idTokenAccessTokenType = "id_token_at_jwt"          // an access token passed off as ID token
    case idTokenMissing = "id_token_missing"
    case idTokenAuthTimeZero = "id_token_auth_time_zero"  // present, meaningless
    case dpopTokenType = "dpop_token_type"                 // token_type DPoP (valid, but no proof was sent)
    // The token response itself.
    case noAccessToken = "no_access_token"
    case unknownTokenType = "unknown_token_type"
    case notJSON = "not_json"
    case oversize = "oversize"
    case noExpiresIn = "no_expires_in"                    // valid (RFC 6749 §5.1 makes it optional): the JWT's exp says it

    var atAuthorize: Bool { self == .wrongIssParam || self == .omitIssParam || self == .accessDenied }
}
