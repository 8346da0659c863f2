import BrokerCore
import Foundation

/// OIDCTokenEndpoint calls a client's IdP token endpoint, found through discovery, with the
/// client's authentication method (RFC 6749 §2.3): `client_secret_basic` (form-encoded id and
/// secret in HTTP Basic), `client_secret_post`, or `none` (client_id in the form).
public final class OIDCTokenEndpoint: TokenEndpoint {
    public typealias SecretSource = @Sendable (ClientRegistration) throws -> String?

    private let http: BlockingHTTP
    private let metadata: IssuerMetadataCache
    private let secret: SecretSource
    private let clock: any Clock

    public init(http: BlockingHTTP, metadata: IssuerMetadataCache, clock: any Clock, secret: @escaping SecretSource) {
        self.http = http
        self.metadata = metadata
        self.secret = secret
        self.clock = clock
    }

    public func refresh(client: ClientRegistration, refreshToken: String) throws(TokenEndpointError) -> TokenGrant {
        try post(client: client, fields: [("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
    }

    /// POSTs a token request with the client's authentication and checks the answer.
    public func post(client: ClientRegistration, fields: [(String, String)]) throws(TokenEndpointError) -> TokenGrant {
        let meta = try metadata.metadata(issuer: client.issuer, now: clock.now())
        var headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        var form = fields
        let clientSecret: String?
        do { clientSecret = try secret(client) } catch { throw .metadata("client secret unavailable") }
        switch client.authMethod {
        case .none:
            form.append(("client_id", client.clientID))
        case .clientSecretBasic:
            guard let s = clientSecret else { throw .metadata("client has no secret") }
            let pair = FormEncoding.encode(client.clientID) + ":" + FormEncoding.encode(s)
            headers.append("Authorization: Basic " + Data(pair.utf8).base64EncodedString())
        case .clientSecretPost:
            guard let s = clientSecret else { throw .metadata("client has no secret") }
            form += [("client_id", client.clientID), ("client_secret", s)]
        case .privateKeyJWT:
            throw .metadata("private_key_jwt is not supported yet")
        }
        do {
            return try TokenResponse.parse(http.send("POST", meta.tokenEndpoint, headers: headers, body: Array(FormEncoding.body(form).utf8)))
        } catch let e as BlockingHTTP.Failure {
            switch e {
            case .transport(let why): throw .transient(reason: "token endpoint: \(why)", retryAfter: nil)
            case .tooLarge: throw .invalidResponse("token endpoint: response too large")
            }
        } catch let e as TokenEndpointError {
            throw e
        } catch {
            throw .invalidResponse("token endpoint: unreadable response")
        }
    }
}
