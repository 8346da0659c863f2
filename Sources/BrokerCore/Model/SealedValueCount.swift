import Foundation

/// SealedValueCount is the fleet's count of sealed values by key id, and when it was taken
/// (nil: never; the values are then empty).
public struct SealedValueCount: Sendable, Equatable {
    public var values: [String: Int]
    public var countedAt: Date?

    public init(values: [String: Int], countedAt: Date?) {
        self.values = values
        self.countedAt = countedAt
    }
}
