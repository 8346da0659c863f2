import BrokerHTTP

/// The discovery route, counted: `discovery_fetches` in `/stats` is how often a client read the
/// document, so that tests see a broker read it once, not once per waiting request.
extension DevIdP {
    func countedDiscovery(_ issuer: String) -> HTTPResponse {
        state.withLock { $0.discoveryFetches += 1 }
        return json(200, discovery(issuer))
    }
}
