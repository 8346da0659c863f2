import Foundation

/// A refresh token presented at a token endpoint, decided in one place for the dev IdP's own
/// endpoint and every personality's: a rotated token presented again revokes its whole family,
/// with no grace period (XID's semantics).
extension DevIdPState {
    enum RefreshOutcome {
        case granted(subject: String, scope: String, family: String, kind: String?)
        /// Unknown, another client's, another endpoint's, revoked, or a rotated one (the family revoked).
        case refused
        /// A DPoP-bound grant presented without its key.
        case keyRefused
    }

    /// Presents `presented` for `clientID` at `personality`'s endpoint (nil: the dev IdP's own).
    /// With `next` the grant rotates to it; without, the token stays current (a reusable one).
    mutating func presentRefresh(_ presented: String, clientID: String, jkt: String?, personality: String?, next: String?,
                                 now: Date) -> RefreshOutcome {
        guard let rt = refreshTokens[presented], rt.client == clientID, var family = families[rt.family],
              family.personality == personality, !family.revoked else { return .refused }
        // Key continuity: a bound grant is refreshed only with its own key (nothing rotates).
        guard family.jkt == jkt || (family.jkt == nil && clients[clientID]?.dpopRequired != true && !settings.fapi2) else {
            return .keyRefused
        }
        guard family.current == presented else {
            // Reuse of a rotated token: revoke the whole family, no grace period.
            family.revoked = true
            families[rt.family] = family
            stats[clientID, default: .init()].reuseDetected += 1
            stats[clientID, default: .init()].familiesRevoked += 1
            return .refused
        }
        if let next {
            family.current = next
            // Like django-oauth-toolkit: the family's earlier access tokens die with the rotation.
            if settings.killOldAccessTokens {
                family.accessValidFrom = family.accessIssued
                family.kills.append((family.accessValidFrom, now))
            }
            refreshTokens[next] = .init(family: rt.family, client: clientID, subject: rt.subject, scope: rt.scope, kind: rt.kind)
        } else if family.uses > 0 {
            stats[clientID, default: .init()].refreshRepeats += 1
        }
        family.uses += 1
        families[rt.family] = family
        stats[clientID, default: .init()].refreshesOK += 1
        stats[clientID, default: .init()].refreshTimes[rt.subject, default: []].append(now.timeIntervalSince1970)
        return .granted(subject: rt.subject, scope: rt.scope, family: rt.family, kind: rt.kind)
    }
}
