import BrokerCore

/// ProxyExchange is what a proxied call needs before its first send: its credential, its
/// client's upstream, the URL, the body as it will be sent, and the machine deciding the rest.
struct ProxyExchange {
    let call: ProxyCall
    var credential: ProxyCredential
    let settings: UpstreamSettings
    let target: UpstreamURL
    let backoff: UpstreamBackoffs.Key
    let body: (any ByteSource)?
    var machine: ProxyMachine
    /// The client certificate presented to the upstream (a mutual-TLS client's); nil: none.
    let certificate: ClientTLSCredential?
    /// Where the resource server's DPoP nonce is kept: tenant, client and origin.
    let nonceKey: String
    /// The caller's headers that go on.
    let forwarded: [(name: String, value: String)]
}
