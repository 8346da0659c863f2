import Foundation

/// SubjectSource is where the user's id at the provider comes from: the ID token's `sub`
/// (OpenID), a "who am I" call with the new access token (GitHub `GET /user` → `/id`), or a
/// member of the token answer (Slack `/authed_user/id`).
public struct SubjectSource: Sendable, Equatable {
    public enum From: String, Sendable, CaseIterable {
        case idToken = "id_token"
        case userinfo
        case tokenResponse = "token_response"
    }

    public var from: From
    /// With `userinfo`: the call's URL (nil: the provider's userinfo endpoint; `{token}` in it
    /// stands for the new access token, HubSpot's `…/access-tokens/{token}`) and method.
    public var url: String?
    public var method = "GET"
    /// Where the id is in the answer (`/sub` by default).
    public var pointer = JSONPointer("/sub")!

    public init(from: From, url: String? = nil, method: String = "GET", pointer: JSONPointer = JSONPointer("/sub")!) {
        self.from = from
        self.url = url
        self.method = method
        self.pointer = pointer
    }
}
