import BrokerCore

/// MissingSealer stands in when a command was started without sealing keys because it seals
/// nothing (migrate, tenant, apikey). Reaching it is a programming error, never silent data
/// sealed under a throwaway key.
struct MissingSealer: Sealer {
    var sealingKeyID: String? { nil }

    func seal(_ plaintext: String, context: String) -> [UInt8] {
        preconditionFailure("this command has no sealing key configured")
    }

    func open(_ sealed: [UInt8], context: String) throws -> String {
        throw SealError("no sealing key configured (TOKENBROKER_SEALING_KEYS)")
    }
}
