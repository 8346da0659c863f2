import BrokerCore
import BrokerCrypto
import Foundation

/// JWTSigner makes compact JWS tokens signed ES256 (RFC 7515 §7.1, RFC 7518 §3.4) and publishes
/// the public key as a JWK.
final class JWTSigner: Sendable {
    let kid: String
    private let key: ES256PrivateKey

    init(kid: String) {
        self.kid = kid
        key = ES256PrivateKey()
    }

    func sign(_ claims: [String: Any], type: String) -> String {
        let header = ["alg": "ES256", "typ": type, "kid": kid]
        let h = Base64URL.encode(try! JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]))
        let p = Base64URL.encode(try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let input = h + "." + p
        return input + "." + Base64URL.encode(key.sign(Array(input.utf8)))
    }

    var jwk: [String: String] {
        let (x, y) = key.publicCoordinates
        return ["kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": kid, "alg": "ES256", "use": "sig"]
    }
}
