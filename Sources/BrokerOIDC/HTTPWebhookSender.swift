import BrokerCore
import Foundation

/// HTTPWebhookSender delivers webhooks through libcurl (BlockingHTTP): no redirects, the
/// answer's body read only up to BlockingHTTP's limit and dropped, and — unless
/// `allowPrivateNetworks` — no connection to an address that is not public: a tenant's operator
/// must not make the broker reach its own network (metadata services, databases, loopback).
public struct HTTPWebhookSender: WebhookSender {
    public struct Unreachable: Error, CustomStringConvertible { public let description: String }
    let http: BlockingHTTP
    let allowPrivateNetworks: Bool

    public init(http: BlockingHTTP, allowPrivateNetworks: Bool) {
        self.http = http
        self.allowPrivateNetworks = allowPrivateNetworks
    }

    public func post(_ url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: TimeInterval) throws -> Int {
        guard let u = URL(string: url) else { throw Unreachable(description: "not a URL") }
        do {
            return try http.send("POST", u, headers: headers.map { "\($0.name): \($0.value)" }, body: body, timeout: timeout,
                                 publicOnly: !allowPrivateNetworks).status
        } catch {
            switch error {
            case .notSent(let why), .unanswered(let why): throw Unreachable(description: why)
            case .certificateRefused(let why): throw Unreachable(description: "TLS certificate refused: \(why)")
            case .tooLarge: throw Unreachable(description: "the answer was too large")
            }
        }
    }
}
