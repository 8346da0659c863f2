import BrokerCore

/// ProxyAnswer is what the caller of a proxied call gets: the upstream's head (its body then
/// streamed into the sink the route hands back), or the broker's own refusal.
public enum ProxyAnswer: Sendable {
    /// `length`: the body's length when the upstream said it (nil: until it ends).
    case head(status: Int, headers: [(name: String, value: String)], length: Int?)
    case refused(BrokerError)
}
