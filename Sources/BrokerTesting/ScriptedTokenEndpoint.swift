import BrokerCore
import Foundation
import Synchronization

/// ScriptedTokenEndpoint answers refreshes from a script and records every refresh token it was
/// sent, so that a test can prove a token was never spent twice. An optional gate holds calls
/// until the test opens it (to line concurrent callers up behind one refresh).
public final class ScriptedTokenEndpoint: TokenEndpoint {
    public typealias Answer = @Sendable (_ refreshToken: String, _ call: Int) throws(TokenEndpointError) -> TokenGrant

    private let answer: Answer
    private let spent = Mutex<[String]>([])
    private let gate: DispatchSemaphore?
    private let introspection: @Sendable (String) throws(TokenEndpointError) -> Bool?
    private let introspected = Mutex<[String]>([])

    public init(gated: Bool = false, answer: @escaping Answer = ScriptedTokenEndpoint.rotating(),
                introspection: @escaping @Sendable (String) throws(TokenEndpointError) -> Bool? = { _ in nil }) {
        self.answer = answer
        self.introspection = introspection
        gate = gated ? DispatchSemaphore(value: 0) : nil
    }

    public func refresh(client: ClientRegistration, refreshToken: String, patience: TimeInterval, dpop: DPoPProof?) throws(TokenEndpointError)
        -> TokenGrant {
        let n = spent.withLock { s -> Int in
            s.append(refreshToken)
            return s.count
        }
        gate?.wait()
        return try answer(refreshToken, n)
    }

    /// A client-credentials grant, answered by the script as a refresh of the token
    /// "client_credentials" (and recorded among the spent tokens under that name).
    public func clientCredentials(client: ClientRegistration, ask: AppTokenAsk, dpop: DPoPProof?) throws(TokenEndpointError) -> TokenGrant {
        let n = spent.withLock { s -> Int in
            s.append("client_credentials")
            return s.count
        }
        gate?.wait()
        return try answer("client_credentials", n)
    }

    /// Codes are not part of these unit tests: the login flow is tested against the development IdP.
    public func exchangeCode(client: ClientRegistration, code: String, verifier: String, dpop: DPoPProof?) throws(TokenEndpointError) -> TokenGrant {
        throw .invalidResponse("ScriptedTokenEndpoint does not exchange codes")
    }

    public func pushAuthorizationRequest(client: ClientRegistration, parameters: [(String, String)], dpop: DPoPProof?) throws(TokenEndpointError)
        -> (requestURI: String, expiresIn: Int) {
        throw .invalidResponse("ScriptedTokenEndpoint does not push authorization requests")
    }

    /// Token exchange is tested against the development IdP.
    public func exchange(client: ClientRegistration, subjectToken: String, _ ask: TokenExchange, actorToken: String?, dpop: DPoPProof?)
        throws(TokenEndpointError) -> ExchangedToken {
        throw .invalidResponse("ScriptedTokenEndpoint does not exchange tokens")
    }

    /// Records nothing: revocation is tested against the development IdP.
    public func revoke(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) -> IdPRevocation { .revoked }

    public func revocationSupported(client: ClientRegistration) throws(TokenEndpointError) -> Bool { true }

    public func userID(client: ClientRegistration, accessToken: String) throws(TokenEndpointError) -> String {
        throw .metadata("no userinfo here")
    }

    public func endSessionURL(client: ClientRegistration, idTokenHint: String?, postLogoutRedirectURI: String?, state: String)
        throws(TokenEndpointError) -> String? { nil }

    /// What introspection says of a refresh token: `introspection` decides (nil: not offered).
    public func introspect(client: ClientRegistration, token: String, hint: String) throws(TokenEndpointError) -> Bool? {
        introspected.withLock { $0.append(token) }
        return try introspection(token)
    }

    /// Lets `n` held calls proceed.
    public func open(_ n: Int = 1) { for _ in 0..<n { gate?.signal() } }

    /// Every token introspected, in order.
    public var introspectedTokens: [String] { introspected.withLock { $0 } }

    /// Every refresh token presented, in order.
    public var spentTokens: [String] { spent.withLock { $0 } }

    /// Answers each call with fresh tokens: access `at-N`, refresh `rt-N`, living `lifetime`.
    public static func rotating(lifetime: TimeInterval = 3600, rotate: Bool = true) -> Answer {
        { _, n in
            TokenGrant(accessToken: "at-\(n)", tokenType: .bearer, expiresIn: lifetime, refreshToken: rotate ? "rt-\(n)" : nil,
                       scope: nil, idToken: nil)
        }
    }
}
