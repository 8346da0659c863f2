import BrokerCore
import COpenSSL
import Foundation

/// OpenSSLClientCertificates reads a client's TLS client certificate chain and key as libcurl's
/// OpenSSL will load them (RFC 8705 §2): every certificate parses and is valid at `now`, the key
/// is one unencrypted private key and the leaf's (`X509_check_private_key`), and each certificate
/// is issued by the next one (leaf first). The view it answers
/// is the leaf's `x5t#S256` (RFC 8705 §3.1), its subject (RFC 4514) and `notAfter`. No fault
/// quotes a certificate's content or anything of the key.
public struct OpenSSLClientCertificates: ClientCertificateCheck {
    public init() {}

    public func inspect(chain: String, key: String, now: Date) -> Result<ClientCertificate, ClientCertificateProblem> {
        if let p = ClientCertificateRules.shapeProblem(chain: chain, key: key) { return .failure(ClientCertificateProblem(p)) }
        var certs: [OpaquePointer] = []
        defer { certs.forEach { X509_free($0) } }
        for (i, block) in (TrustAnchorRules.blocks(chain) ?? []).enumerated() {
            guard let cert = OpenSSLTrustAnchors.certificate(block.text) else {
                return .failure(ClientCertificateProblem("tls_client_certificate: certificate \(i + 1) does not parse as an X.509 certificate"))
            }
            certs.append(cert)
            if let p = OpenSSLTrustAnchors.validityProblem(cert, now: now) {
                return .failure(ClientCertificateProblem("tls_client_certificate: certificate \(i + 1) \(p)"))
            }
        }
        guard let leaf = certs.first else {
            return .failure(ClientCertificateProblem("tls_client_certificate: certificate 1 does not parse as an X.509 certificate"))
        }
        guard let pkey = Self.privateKey(key) else {
            return .failure(ClientCertificateProblem("tls_client_key: does not parse as an unencrypted private key"))
        }
        defer { EVP_PKEY_free(pkey) }
        guard X509_check_private_key(leaf, pkey) == 1 else {
            ERR_clear_error()
            // The client's own certificate sent further down the chain: say so, not "another key".
            if let k = certs.indices.dropFirst().first(where: { X509_check_private_key(certs[$0], pkey) == 1 }) {
                ERR_clear_error()
                return .failure(ClientCertificateProblem("tls_client_certificate: the chain is in the wrong order: the key is that of certificate \(k + 1); the client's own certificate comes first, then each issuer"))
            }
            ERR_clear_error()
            return .failure(ClientCertificateProblem("tls_client_key: is not the private key of the certificate (certificate 1)"))
        }
        // TLS sends the chain as given, and a server checks each certificate against the next
        // (RFC 8446 §4.4.2): leaf first, then the certificate that issued it, and so on up.
        for i in certs.indices.dropLast() where X509_check_issued(certs[i + 1], certs[i]) != X509_V_OK {
            ERR_clear_error()
            return .failure(ClientCertificateProblem("tls_client_certificate: the chain is in the wrong order: certificate \(i + 2) did not issue certificate \(i + 1); the client's own certificate comes first, then each issuer"))
        }
        guard let der = Self.der(leaf), let digest = try? SHA256.hash(der),
              let notAfter = OpenSSLTrustAnchors.date(X509_get0_notAfter(leaf)) else {
            ERR_clear_error()
            return .failure(ClientCertificateProblem("tls_client_certificate: certificate 1 could not be encoded"))
        }
        return .success(ClientCertificate(thumbprint: Base64URL.encode(digest), subject: Self.subject(leaf), notAfter: notAfter))
    }

    /// The key, parsed without a passphrase: an encrypted key fails here instead of asking a
    /// terminal for one (an empty passphrase is given).
    static func privateKey(_ pem: String) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buf in
            guard let bio = BIO_new_mem_buf(buf.baseAddress, Int32(buf.count)) else { return nil }
            defer { BIO_free(bio) }
            return "".withCString { empty in PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: empty)) }
        }
        if parsed == nil { ERR_clear_error() }
        return parsed
    }

    /// The certificate's DER encoding.
    static func der(_ cert: OpaquePointer) -> [UInt8]? {
        let n = i2d_X509(cert, nil)
        guard n > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(n))
        let written = out.withUnsafeMutableBufferPointer { b -> Int32 in
            var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
            return i2d_X509(cert, &p)
        }
        return written == n ? out : nil
    }

    /// The subject DN as RFC 4514 text (OpenSSL's XN_FLAG_RFC2253), as `tls_client_auth_subject_dn`
    /// is registered (RFC 8705 §2.1.2).
    static func subject(_ cert: OpaquePointer) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, tb_XN_FLAG_RFC2253) >= 0 else { return "" }
        var data: UnsafeMutablePointer<CChar>?
        let n = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data)
        guard n > 0, let data else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    }
}
