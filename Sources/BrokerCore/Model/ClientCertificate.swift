import Foundation

/// ClientCertificate is what may be shown of a client registration's TLS client certificate
/// (RFC 8705 §2): its SHA-256 thumbprint, subject and end of validity. The chain and its private
/// key are sealed at rest (`ClientTLSCredential`) and never shown.
public struct ClientCertificate: Sendable, Equatable {
    /// base64url of the SHA-256 of the leaf certificate's DER: the value of `cnf.x5t#S256` in a
    /// certificate-bound token (RFC 8705 §3.1).
    public let thumbprint: String
    /// The leaf's subject distinguished name, RFC 4514 text (`tls_client_auth_subject_dn`).
    public let subject: String
    /// The leaf's `notAfter`.
    public let notAfter: Date

    public init(thumbprint: String, subject: String, notAfter: Date) {
        (self.thumbprint, self.subject, self.notAfter) = (thumbprint, subject, notAfter)
    }
}

/// ClientTLSCredential is a client's certificate chain and private key (PEM), unsealed, as the
/// connection to its provider presents them. Equal and hashed by the leaf's thumbprint alone:
/// the key belongs to the certificate (checked at registration), so the thumbprint is the
/// identity a connection was made with, and no key material reaches a hash table.
public struct ClientTLSCredential: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public let certificatePEM: String
    public let keyPEM: String
    public let thumbprint: String

    public init(certificatePEM: String, keyPEM: String, thumbprint: String) {
        (self.certificatePEM, self.keyPEM, self.thumbprint) = (certificatePEM, keyPEM, thumbprint)
    }

    public static func == (a: Self, b: Self) -> Bool { a.thumbprint == b.thumbprint }
    public func hash(into h: inout Hasher) { h.combine(thumbprint) }
    /// The thumbprint only: a credential printed by mistake shows no key.
    public var description: String { "ClientTLSCredential(x5t#S256: \(thumbprint))" }
    public var debugDescription: String { description }
}
