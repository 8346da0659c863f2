/// DPoPTarget is a request a worker is about to make with a DPoP-bound token (RFC 9449 §7): the
/// broker returns a proof for it, bound to the token (`ath`), so that the worker never holds the key.
public struct DPoPTarget: Sendable, Equatable {
    /// The request's method (`htm`), e.g. `GET`.
    public let method: String
    /// The request's target URI (`htu`): without query and fragment, scheme and host lowercase.
    public let uri: String
    /// The resource server's last `DPoP-Nonce` (§9), when it sent one.
    public let nonce: String?

    /// Why a target cannot be proved for.
    public struct Invalid: Error, Equatable {
        public let reason: String
    }

    /// A target checked: a method token (RFC 9110 §9.1), an absolute http(s) URI (cut to its
    /// target URI once, here), a nonce of visible characters without quote or backslash (§8.1's
    /// NQCHAR).
    public init(method: String, uri: String, nonce: String?) throws(Invalid) {
        guard (1...32).contains(method.utf8.count), method.utf8.allSatisfy({ Self.tchar[Int($0)] }) else {
            throw Invalid(reason: "'htm' must be an HTTP method")
        }
        guard uri.utf8.count <= 4096, let target = DPoPProof.targetURI(uri) else { throw Invalid(reason: "'htu' must be an absolute http or https URI") }
        if let n = nonce, !(1...512).contains(n.utf8.count) || !n.utf8.allSatisfy({ $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }) {
            throw Invalid(reason: "'nonce' must be 1...512 visible characters without quote or backslash")
        }
        self.method = method
        self.uri = target
        self.nonce = nonce
    }

    /// RFC 9110 §5.6.2 tchar, by byte.
    static let tchar: [Bool] = (0..<256).map { b in
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || "!#$%&'*+-.^_`|~".utf8.contains(UInt8(b))
    }
}
