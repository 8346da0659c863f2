import Foundation
import BrokerCore

/// SealingKeys is the keyring of the sealer: the current key seals, every listed key opens.
///
/// Text form (environment variable or file): comma- or newline-separated `id:base64` entries,
/// each key exactly 32 bytes (AES-256). Ids are 1...32 characters of `[A-Za-z0-9._-]`. An entry
/// ending in `:decrypt-only` opens but never seals; the current key is the first entry that is
/// not. Rotating (docs/reference/configuration.md): add the new key decrypt-only everywhere, then make it current
/// everywhere, reseal, and drop the old key once nothing is sealed under it.
public struct SealingKeys: Sendable {
    public let currentID: String
    let keys: [String: [UInt8]]

    public init(currentID: String, keys: [String: [UInt8]]) {
        self.currentID = currentID
        self.keys = keys
    }

    /// Parses the text form; the error message names the entry, never the key.
    public static func parse(_ text: String) throws(SealError) -> SealingKeys {
        let entries = text.split(whereSeparator: { $0 == "," || $0 == "\n" })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        guard !entries.isEmpty else { throw SealError("no sealing key given") }
        var keys: [String: [UInt8]] = [:]
        var first: String?
        for (n, e) in entries.enumerated() {
            var parts = e.split(separator: ":", maxSplits: 2).map(String.init)
            let decryptOnly = parts.count == 3 && parts[2] == "decrypt-only"
            if decryptOnly { parts.removeLast() }
            guard parts.count == 2, let id = parts.first, (1...32).contains(id.utf8.count),
                  id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 46 || $0 == 95 })
            else { throw SealError("sealing key entry \(n + 1) is not of the form id:base64 or id:base64:decrypt-only") }
            guard let raw = Data(base64Encoded: parts[1]), raw.count == 32 else {
                throw SealError("sealing key '\(id)' is not 32 bytes of base64")
            }
            guard keys[id] == nil else { throw SealError("sealing key id '\(id)' appears twice") }
            keys[id] = [UInt8](raw)
            if first == nil, !decryptOnly { first = id }
        }
        guard let current = first else { throw SealError("every sealing key is decrypt-only: one must seal") }
        return SealingKeys(currentID: current, keys: keys)
    }

    /// A new random key in text form (for `make run` and tests).
    public static func generate(id: String = "k1") throws(CryptoFailure) -> String {
        id + ":" + Data(try OpenSSL.randomBytes(32)).base64EncodedString()
    }
}
