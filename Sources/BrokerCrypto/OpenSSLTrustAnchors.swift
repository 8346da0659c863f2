import BrokerCore
import COpenSSL
import Foundation

/// OpenSSLTrustAnchors checks a client's trust anchor bundle as libcurl's OpenSSL will read it:
/// each PEM block parsed as X.509, a CA by `X509_check_ca` (basicConstraints CA:TRUE, and
/// keyCertSign when the key usage is given), valid at `now`. Nothing of a certificate's content
/// is ever part of a fault.
public struct OpenSSLTrustAnchors: TrustAnchorCheck {
    public init() {}

    public func problem(pem: String, now: Date) -> String? {
        if let p = TrustAnchorRules.shapeProblem(pem) { return p }
        for (i, block) in (TrustAnchorRules.blocks(pem) ?? []).enumerated() {
            if let p = Self.problem(block.text, now: now) { return "certificate \(i + 1) \(p)" }
        }
        return nil
    }

    /// What is wrong with one certificate's PEM block, said after "certificate N".
    static func problem(_ block: String, now: Date) -> String? {
        guard let cert = certificate(block) else { return "does not parse as an X.509 certificate" }
        defer { X509_free(cert) }
        guard X509_check_ca(cert) == 1 else { return "is not a CA (basicConstraints CA:TRUE, and keyCertSign when key usage is given)" }
        return validityProblem(cert, now: now)
    }

    /// One PEM block parsed as X.509 (the caller frees it), or nil (OpenSSL's error queue cleared).
    static func certificate(_ block: String) -> OpaquePointer? {
        let bytes = Array(block.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buf in
            guard let bio = BIO_new_mem_buf(buf.baseAddress, Int32(buf.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        if parsed == nil { ERR_clear_error() }
        return parsed
    }

    /// What is wrong with a certificate's validity period at `now`, said after "certificate N".
    static func validityProblem(_ cert: OpaquePointer, now: Date) -> String? {
        guard let notBefore = date(X509_get0_notBefore(cert)), let notAfter = date(X509_get0_notAfter(cert)) else {
            ERR_clear_error()
            return "has a validity period that does not parse"
        }
        if now < notBefore { return "is not valid before \(RFC3339Text.format(notBefore))" }
        if now > notAfter { return "expired at \(RFC3339Text.format(notAfter))" }
        return nil
    }

    /// An ASN.1 time as a date (UTC), or nil when it does not parse.
    static func date(_ t: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let t else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(t, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}

/// RFC 3339 in UTC to the second, for the dates of a fault.
enum RFC3339Text {
    static func format(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: d)
    }
}
