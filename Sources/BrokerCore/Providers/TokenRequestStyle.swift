/// TokenRequestStyle is how a provider wants its token requests: a form (RFC 6749 §4.1.3) or a
/// JSON object (Notion), with extra parameters for the code exchange and for refreshes.
public struct TokenRequestStyle: Sendable, Equatable {
    public enum Encoding: String, Sendable, CaseIterable { case form, json }

    public var encoding: Encoding = .form
    public var params: [Parameter] = []
    public var refreshParams: [Parameter] = []

    public init() {}
}
