import Foundation

/// PreviousSecret is an API key's secret before its last rotation, still accepted until `until`
/// so that holders can move to the new key without a moment in which neither works.
public struct PreviousSecret: Sendable, Equatable {
    public let hash: [UInt8]
    public let until: Date

    public init(hash: [UInt8], until: Date) {
        self.hash = hash
        self.until = until
    }
}
