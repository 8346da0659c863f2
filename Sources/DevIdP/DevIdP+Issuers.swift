import BrokerHTTP

/// Many issuers in one process: with an issuer-host suffix (`--issuer-hosts idp.localhost`), a
/// request whose `Host` is `<label>.<suffix>[:port]` is served as the issuer
/// `<scheme>://<label>.<suffix>[:port]` — its discovery document and endpoints, the `iss` of
/// every token it signs, the `htu` its DPoP proofs must name and the audience its client
/// assertions must carry. Any other request is served as the default issuer. Clients, users and
/// grants are shared by all issuers: a client registered once is known at every host.
extension DevIdP {
    /// The headers the server must pass for `issuer(for:)` to see the host.
    public static let issuerHeaders = ["host"]

    /// The issuer `req` is addressed to.
    func issuer(for req: HTTPRequest) -> String {
        guard let suffix = issuerHosts else { return issuer }
        return Self.issuer(host: req.header("host"), suffix: suffix, scheme: scheme) ?? issuer
    }

    /// `<scheme>://<host>` when `host` is one DNS label (letters, digits, `-`) before `.<suffix>`,
    /// with an optional port; nil otherwise. Compared without case, answered in lower case
    /// (RFC 3986 §6.2.2.1), so that an issuer is one string whatever the client wrote.
    static func issuer(host: String?, suffix: String, scheme: String) -> String? {
        guard let host = host?.lowercased(), !host.isEmpty else { return nil }
        var name = Substring(host), port: Substring = ""
        if let colon = host.lastIndex(of: ":") {
            name = host[..<colon]
            port = host[colon...]
            guard port.count > 1, port.count <= 6, port.dropFirst().allSatisfy(\.isASCII), port.dropFirst().allSatisfy(\.isNumber) else { return nil }
        }
        let tail = "." + suffix.lowercased()
        guard name.hasSuffix(tail) else { return nil }
        let label = name.dropLast(tail.count)
        guard (1...63).contains(label.count),
              label.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 }),
              label.first != "-", label.last != "-" else { return nil }
        return scheme + "://" + name + port
    }
}
