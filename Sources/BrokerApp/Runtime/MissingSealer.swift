import BrokerCore

/// MissingSealer stands in when a command was started without sealing keys because it seals
/// nothing (migrate, tenant, apikey). Reaching it is an error for that call, never silent data
/// sealed under a throwaway key.
struct MissingSealer: Sealer {
    var sealingKeyID: String? { nil }

    func seal(_ plaintext: String, context: String) throws -> [UInt8] {
        throw SealError("no sealing key configured (TOKENBROKER_SEALING_KEYS)")
    }

    func open(_ sealed: [UInt8], context: String) throws -> String {
        throw SealError("no sealing key configured (TOKENBROKER_SEALING_KEYS)")
    }
}
