/// DPoPTarget is a request a worker is about to make with a DPoP-bound token (RFC 9449 §7): the
/// broker returns a proof for it, bound to the token (`ath`), so that the worker never holds the key.
public struct DPoPTarget: Sendable, Equatable {
    /// The request's method (`htm`), e.g. `GET`.
    public let method: String
    /// The request's URI (`htu`), without query and fragment.
    public let uri: String
    /// The resource server's last `DPoP-Nonce` (§9), when it sent one.
    public let nonce: String?

    public init(method: String, uri: String, nonce: String?) {
        self.method = method
        self.uri = uri
        self.nonce = nonce
    }

    /// Why the target cannot be proved for, or nil: a method token (RFC 9110 §9.1), an absolute
    /// http(s) URI, a nonce of visible characters without quote or backslash (§8.1's NQCHAR).
    public static func problem(method: String, uri: String, nonce: String?) -> String? {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        guard (1...32).contains(method.count), method.allSatisfy(tchar.contains) else { return "'htm' must be an HTTP method" }
        guard uri.utf8.count <= 4096, DPoPProof.targetURI(uri) != nil else { return "'htu' must be an absolute http or https URI" }
        if let n = nonce, !(1...512).contains(n.utf8.count)
            || !n.unicodeScalars.allSatisfy({ $0.value == 0x21 || (0x23...0x5B).contains($0.value) || (0x5D...0x7E).contains($0.value) }) {
            return "'nonce' must be 1...512 visible characters without quote or backslash"
        }
        return nil
    }
}
