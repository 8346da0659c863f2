/// DescriptorError is why a provider descriptor was refused: the member (a path such as
/// `token_response.keep.team`) and what is wrong with it. Answered as 400 `invalid_descriptor`.
public struct DescriptorError: Error, Sendable, Equatable, CustomStringConvertible {
    public let member: String
    public let problem: String

    public init(_ member: String, _ problem: String) {
        self.member = member
        self.problem = problem
    }

    public var description: String { member.isEmpty ? problem : "'\(member)' \(problem)" }
}
