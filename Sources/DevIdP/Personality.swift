/// Personality is how one real provider's OAuth 2.0 endpoints differ from the standards, as
/// data: the development IdP plays it under `/p/<name>/…` (DevIdP+Personalities), so that a
/// provider descriptor can be tested end to end without the provider. Every member's default
/// is the standards' (RFC 6749, RFC 7009, RFC 7636). Clients, users and refresh-token families
/// are the dev IdP's own: a client registered once is usable with every personality, and a
/// grant is refreshed only at the personality that issued it.
struct Personality: Sendable {
    var name: String
    /// The provider's paths, below `/p/<name>`. `{tenant}` is a segment naming a tenant.
    var paths = Paths()
    var pkce: PKCE = .optional
    /// When the code exchange issues a refresh token.
    var offline: Offline = .always
    var refresh: Refresh = .rotating
    /// The token-request bodies accepted (by `Content-Type`).
    var tokenRequest: Set<BodyEncoding> = [.form]
    /// A code exchange may leave out `grant_type` (GitHub's documents none).
    var grantTypeOptional = false
    /// Where the client's credentials may be: HTTP Basic, the body, or either.
    var clientAuth: Set<ClientAuth> = [.basic, .body]
    var answer: AnswerFormat = .json
    var errors: ErrorStyle = .rfc6749
    var codes = ErrorCodes()
    var shape: Shape = .standard
    var tokenType = "Bearer"
    /// The provider's access-token lifetime (a client registered with `access_ttl` gets its own).
    var accessTTL: Int? = nil
    /// False: access tokens never expire and answers carry no `expires_in` (GitHub OAuth Apps).
    var accessExpires = true
    /// A rotation also ends the grant's earlier access tokens (GitHub App user tokens).
    var rotationEndsAccess = false
    /// False: tokens expire but answers do not say when (Salesforce).
    var sendsExpiresIn = true
    /// `expires_in` as a JSON string of digits.
    var expiresInString = false
    /// How scopes are joined in answers.
    var scopeSeparator = " "
    /// The refresh token's own lifetime, sent beside it under this name.
    var grantLifetime: GrantLifetime? = nil
    /// Access and refresh tokens start with these, as the provider's do.
    var accessPrefix = ""
    var refreshPrefix = ""
    var revocation: Revocation = .rfc7009(path: "/revoke")
    var whoAmI: WhoAmI = .userinfo(path: "/userinfo")
    var metadata: Metadata = .none
    /// OpenID Connect: an ID token (RS256) with the `openid` scope, discovery at the issuer.
    var oidc = false
    var tenancy: Tenancy = .none
    var userID: UserID = .subject
    /// Parameters added to the authorization response beside `code` and `state` (Intuit's `realmId`).
    var redirectExtras: [String: String] = [:]
    /// A header the revocation request must carry (Notion's `Notion-Version`): without it the
    /// request is refused with 400 `missing_version`, in Notion's error object.
    var revocationVersionHeader: String? = nil
    /// RFC 9207: `iss` in the authorization response.
    var sendsIss = false
    /// Where token rotation is an app setting (Slack): how the personality differs for a client
    /// registered with `"token_rotation": true`. Nil: the personality always plays itself.
    var tokenRotation: (@Sendable (inout Personality) -> Void)? = nil

    init(_ name: String, _ configure: (inout Personality) -> Void = { _ in }) {
        self.name = name
        configure(&self)
    }

    /// The personality as it plays for a client: with its token rotation when the provider has
    /// one as an app setting and the client is registered with it on.
    func played(rotation: Bool) -> Personality {
        guard rotation, let change = tokenRotation else { return self }
        var p = self
        change(&p)
        p.tokenRotation = nil
        return p
    }

    /// An OpenID Connect provider: ID tokens with `openid`, discovery at the issuer.
    init(openID name: String, _ configure: (inout Personality) -> Void) {
        self.init(name) {
            $0.oidc = true
            $0.metadata = .openid
            configure(&$0)
        }
    }
}
