import BrokerCore

/// Why a call is refused before it reaches the upstream, with what it is counted under.
struct ProxyRefused: Error {
    let error: BrokerError
    let client: String
    var host: String = ""
    var session: String? = nil
}
