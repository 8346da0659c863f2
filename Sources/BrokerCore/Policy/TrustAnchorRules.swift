import Foundation

/// TrustAnchorRules are the limits of a trust anchor bundle, and its PEM blocks.
public enum TrustAnchorRules {
    /// The largest bundle accepted, in bytes of PEM.
    public static let maxBytes = 65_536
    /// The most certificates a bundle may hold.
    public static let maxCertificates = 32

    /// One `-----BEGIN <label>-----` … `-----END <label>-----` block of a PEM text.
    public struct Block: Sendable, Equatable {
        public let label: String
        /// The whole block, its BEGIN and END lines included.
        public let text: String
    }

    /// The PEM blocks of `pem` in order, or nil when a BEGIN line has no matching END. Text
    /// between blocks is ignored, as in any CA bundle file.
    public static func blocks(_ pem: String) -> [Block]? {
        var out: [Block] = []
        var rest = pem[...]
        while let begin = rest.range(of: "-----BEGIN ") {
            guard let labelEnd = rest[begin.upperBound...].range(of: "-----") else { return nil }
            let label = String(rest[begin.upperBound..<labelEnd.lowerBound])
            guard let end = rest[labelEnd.upperBound...].range(of: "-----END \(label)-----") else { return nil }
            out.append(Block(label: label, text: String(rest[begin.lowerBound..<end.upperBound]) + "\n"))
            rest = rest[end.upperBound...]
        }
        return out
    }

    /// The faults that need no cryptography library: size, count, block kinds.
    public static func shapeProblem(_ pem: String) -> String? {
        guard pem.utf8.count <= maxBytes else { return "the bundle is larger than \(maxBytes) bytes" }
        guard let blocks = blocks(pem) else { return "a PEM block has no END line" }
        guard !blocks.isEmpty else { return "no certificate found (PEM blocks of -----BEGIN CERTIFICATE-----)" }
        guard blocks.count <= maxCertificates else { return "more than \(maxCertificates) certificates" }
        for (i, b) in blocks.enumerated() where b.label != "CERTIFICATE" {
            // Only the label is named: the block may be a private key pasted by mistake.
            return "block \(i + 1) is not a certificate (it is labelled \(b.label.prefix(40)))"
        }
        return nil
    }
}
