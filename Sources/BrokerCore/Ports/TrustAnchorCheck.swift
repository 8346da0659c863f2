import Foundation

/// TrustAnchorCheck judges a client registration's own trust anchors before they are stored, so
/// that a bundle the TLS library would reject, or one that could never verify a provider, is
/// refused at registration rather than at the first provider call.
public protocol TrustAnchorCheck: Sendable {
    /// Nil when `pem` holds at least one certificate, at most `TrustAnchorRules.maxCertificates`
    /// in at most `TrustAnchorRules.maxBytes`, and every one parses as X.509, is a CA
    /// (basicConstraints CA:TRUE) and is valid at `now`. Otherwise the first fault, naming the
    /// certificate by its position from 1 — never any of its content.
    func problem(pem: String, now: Date) -> String?
}
