import Foundation

/// WebhookSender POSTs one signed delivery and answers the receiver's HTTP status. It follows
/// no redirect. Errors: the receiver could not be reached or did not answer in time.
public protocol WebhookSender: Sendable {
    func post(_ url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: TimeInterval) throws -> Int
}
