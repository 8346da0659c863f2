import Foundation

/// ClientCertificateCheck reads a client registration's TLS client certificate chain and private
/// key (PEM) before they are stored, so that a chain the TLS library would not load, a key that
/// is not the certificate's, or a certificate outside its validity is refused at registration
/// rather than at the first provider call.
public protocol ClientCertificateCheck: Sendable {
    /// The leaf's thumbprint, subject and expiry when `chain` holds one to
    /// `ClientCertificateRules.maxCertificates` certificates (the leaf first), each parses and
    /// is valid at `now`, and `key` is one unencrypted private key matching the leaf. Otherwise
    /// the first fault, naming the certificate by its position from 1 — never any key content.
    func inspect(chain: String, key: String, now: Date) -> Result<ClientCertificate, ClientCertificateProblem>
}

/// Why a client certificate or key was refused; `message` quotes nothing of the key.
public struct ClientCertificateProblem: Error, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// ClientCertificateRules are the limits of a client certificate chain and key.
public enum ClientCertificateRules {
    public static let maxBytes = 65_536
    public static let maxCertificates = 8

    /// The faults that need no cryptography library: size, count, block kinds.
    public static func shapeProblem(chain: String, key: String) -> String? {
        guard chain.utf8.count <= maxBytes, key.utf8.count <= maxBytes else { return "larger than \(maxBytes) bytes" }
        guard let certs = TrustAnchorRules.blocks(chain) else { return "tls_client_certificate: a PEM block has no END line" }
        guard !certs.isEmpty else { return "tls_client_certificate: no certificate found (-----BEGIN CERTIFICATE-----)" }
        guard certs.count <= maxCertificates else { return "tls_client_certificate: more than \(maxCertificates) certificates" }
        for (i, b) in certs.enumerated() where b.label != "CERTIFICATE" {
            return "tls_client_certificate: block \(i + 1) is not a certificate (it is labelled \(b.label.prefix(40)))"
        }
        guard let keys = TrustAnchorRules.blocks(key) else { return "tls_client_key: a PEM block has no END line" }
        guard keys.count == 1, ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"].contains(keys[0].label) else {
            return "tls_client_key: must be one unencrypted private key (-----BEGIN PRIVATE KEY-----)"
        }
        return nil
    }
}

/// ClientCertificateInput is a TLS client certificate chain (leaf first) and its private key as
/// a registration gives them, PEM, before any check. Printed, it shows neither.
public struct ClientCertificateInput: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public let chain: String
    public let key: String

    public init(chain: String, key: String) {
        self.chain = chain
        self.key = key
    }

    public var description: String { "ClientCertificateInput(redacted)" }
    public var debugDescription: String { description }
}
