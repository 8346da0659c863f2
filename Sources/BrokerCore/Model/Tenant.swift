import Foundation

/// Tenant isolates everything: every row and every lock key carries its id.
public struct Tenant: Sendable, Equatable, Codable {
    public let id: String
    public var name: String
    public var disabled: Bool
    public let createdAt: Date

    public init(id: String, name: String, disabled: Bool = false, createdAt: Date) {
        self.id = id
        self.name = name
        self.disabled = disabled
        self.createdAt = createdAt
    }

    /// Whether `id` is a valid slug: lowercase letters, digits and '-', 1...63 characters,
    /// starting with a letter or digit.
    public static func isValidID(_ id: String) -> Bool { Slug.isValid(id) }
}
