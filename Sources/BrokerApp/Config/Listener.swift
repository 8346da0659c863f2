import BrokerHTTP

/// Listener is one address the broker serves, the audiences it serves there, and its TLS.
public struct Listener: Sendable {
    public var http: HTTPServerConfig
    public var audiences: Set<Audience>

    var address: String { "\(http.host):\(http.port)" }

    /// The variable that sets this listener's address (the internal one's when it serves several).
    var variable: String {
        audiences.contains(.internal) ? "TOKENBROKER_LISTEN" : audiences.contains(.public) ? "TOKENBROKER_PUBLIC_LISTEN" : "TOKENBROKER_OPS_LISTEN"
    }

    /// The listeners `TOKENBROKER_LISTEN`, `TOKENBROKER_PUBLIC_LISTEN` and `TOKENBROKER_OPS_LISTEN`
    /// name: audiences given the same address share one listener (by default all three share
    /// the internal one). Each listener's TLS comes from its own variables.
    static func load(_ value: (String) -> String?, template: HTTPServerConfig) throws(BrokerConfig.Invalid) -> [Listener] {
        func address(_ name: String, _ fallback: String) throws(BrokerConfig.Invalid) -> (String, UInt16) {
            let listen = value(name) ?? fallback
            guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
                throw BrokerConfig.Invalid(description: "\(name) must be host:port (got '\(listen)')")
            }
            return (String(listen[..<colon]), port)
        }
        func tls(_ prefix: String) throws(BrokerConfig.Invalid) -> TLSConfig? {
            let cert = value("TOKENBROKER_\(prefix)TLS_CERT_FILE"), key = value("TOKENBROKER_\(prefix)TLS_KEY_FILE")
            guard cert != nil || key != nil else { return nil }
            guard let cert, let key else {
                throw BrokerConfig.Invalid(description: "TOKENBROKER_\(prefix)TLS_CERT_FILE and TOKENBROKER_\(prefix)TLS_KEY_FILE go together")
            }
            return TLSConfig(certificateFile: cert, keyFile: key)
        }
        let internalAddress = try address("TOKENBROKER_LISTEN", "127.0.0.1:8080")
        var internalTLS = try tls("")
        if let ca = value("TOKENBROKER_TLS_CLIENT_CA_FILE") {
            guard internalTLS != nil else {
                throw BrokerConfig.Invalid(description: "TOKENBROKER_TLS_CLIENT_CA_FILE needs TLS on the internal listener (TOKENBROKER_TLS_CERT_FILE, TOKENBROKER_TLS_KEY_FILE)")
            }
            internalTLS?.clientCAFile = ca
            switch value("TOKENBROKER_TLS_CLIENT_CERT") ?? "required" {
            case "required": internalTLS?.clientCertificateRequired = true
            case "optional": internalTLS?.clientCertificateRequired = false
            default: throw BrokerConfig.Invalid(description: "TOKENBROKER_TLS_CLIENT_CERT must be required or optional")
            }
        }
        var listeners = [(internalAddress, Audience.internal, internalTLS)]
        for (audience, prefix) in [(Audience.public, "PUBLIC_"), (.ops, "OPS_")] {
            let name = "TOKENBROKER_\(prefix)LISTEN"
            let own = try tls(prefix)
            guard value(name) != nil else {
                if own != nil { throw BrokerConfig.Invalid(description: "TOKENBROKER_\(prefix)TLS_CERT_FILE needs \(name): a listener of its own") }
                if internalTLS?.clientCertificateRequired == true && internalTLS?.clientCAFile != nil {
                    throw BrokerConfig.Invalid(description: "the internal listener requires client certificates, which \(audience == .public ? "browsers and IdPs" : "probes") do not send: set \(name)")
                }
                listeners.append((internalAddress, audience, internalTLS))
                continue
            }
            listeners.append((try address(name, ""), audience, own))
        }
        var out: [Listener] = []
        for (addr, audience, tls) in listeners {
            if let i = out.firstIndex(where: { $0.http.host == addr.0 && $0.http.port == addr.1 }) {
                guard out[i].http.tls == tls else {
                    throw BrokerConfig.Invalid(description: "\(addr.0):\(addr.1) is given to two listeners with different TLS settings")
                }
                out[i].audiences.insert(audience)
            } else {
                var http = template
                http.host = addr.0
                http.port = addr.1
                http.tls = tls
                out.append(Listener(http: http, audiences: [audience]))
            }
        }
        return out
    }
}
