/// WWWAuthenticate reads the challenges of an upstream's `WWW-Authenticate` headers (RFC 9110
/// §11.6.1) far enough to know what a resource server means: RFC 6750 §3.1's `invalid_token`
/// (for Bearer and DPoP alike) and RFC 9449 §9's `use_dpop_nonce`.
public struct WWWAuthenticate: Sendable, Equatable {
    public struct Challenge: Sendable, Equatable {
        /// The scheme, lowercase (`bearer`, `dpop`).
        public let scheme: String
        /// Parameters by lowercase name, values unquoted.
        public let params: [String: String]
    }

    public let challenges: [Challenge]

    /// Every challenge in every `WWW-Authenticate` value given.
    public init(_ values: [String]) {
        challenges = values.flatMap(Self.parse)
    }

    /// A Bearer or DPoP challenge says the token is invalid (expired, revoked, malformed).
    public var invalidToken: Bool {
        challenges.contains { ($0.scheme == "bearer" || $0.scheme == "dpop") && $0.params["error"] == "invalid_token" }
    }

    /// A DPoP challenge asks for a proof with the resource server's nonce.
    public var useDPoPNonce: Bool {
        challenges.contains { $0.scheme == "dpop" && $0.params["error"] == "use_dpop_nonce" }
    }

    /// No challenge names any error: a bare 401 (`Bearer`, `Bearer realm="x"`, or no header).
    public var namesNoError: Bool { challenges.allSatisfy { $0.params["error"] == nil } }

    /// One header value: `scheme [token68 | param=value, …]`, several challenges separated by
    /// commas. A parameter's value is a token or a quoted string (backslash escapes).
    static func parse(_ value: String) -> [Challenge] {
        var out: [Challenge] = []
        var scheme: String?
        var params: [String: String] = [:]
        let s = Array(value.unicodeScalars)
        var i = 0
        func skipSpace() { while i < s.count, s[i] == " " || s[i] == "\t" { i += 1 } }
        func token() -> String {
            let start = i
            while i < s.count, s[i] != " ", s[i] != "\t", s[i] != ",", s[i] != "=", s[i] != "\"" { i += 1 }
            return String(String.UnicodeScalarView(s[start..<i]))
        }
        func flush() {
            if let sc = scheme { out.append(Challenge(scheme: sc.lowercased(), params: params)) }
            scheme = nil
            params = [:]
        }
        while i < s.count {
            skipSpace()
            if i < s.count, s[i] == "," { i += 1; continue }
            let name = token()
            guard !name.isEmpty else { i += 1; continue }
            skipSpace()
            if i < s.count, s[i] == "=" {
                i += 1
                skipSpace()
                var v = ""
                if i < s.count, s[i] == "\"" {
                    i += 1
                    while i < s.count, s[i] != "\"" {
                        if s[i] == "\\", i + 1 < s.count { i += 1 }
                        v.unicodeScalars.append(s[i])
                        i += 1
                    }
                    i += 1
                } else {
                    v = token()
                    while i < s.count, s[i] == "=" { v += "="; i += 1 }   // token68 padding
                }
                if scheme != nil { params[name.lowercased()] = v }
            } else {
                // A bare word: a new challenge's scheme.
                flush()
                scheme = name
            }
        }
        flush()
        return out
    }
}
