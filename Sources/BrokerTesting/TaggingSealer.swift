import BrokerCore
import Foundation

/// TaggingSealer is the Sealer of unit tests: it encrypts nothing, but binds the context as a
/// real sealer does (a value opened under another context throws), and reverses the bytes so
/// that a sealed value is not its plaintext.
public struct TaggingSealer: Sealer {
    public init() {}
    public var sealingKeyID: String? { "test" }

    public func seal(_ plaintext: String, context: String) throws -> [UInt8] {
        Array((context + "\u{0}" + plaintext).utf8.reversed())
    }

    public func open(_ sealed: [UInt8], context: String) throws -> String {
        let text = String(decoding: sealed.reversed(), as: UTF8.self)
        guard text.hasPrefix(context + "\u{0}") else { throw SealError("moved") }
        return String(text.dropFirst(context.utf8.count + 1))
    }
}
