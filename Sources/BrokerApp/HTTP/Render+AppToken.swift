import Broker
import BrokerCore
import Foundation

extension Render {
    /// An app token's document: a session token's members with `client` instead of
    /// `session_id` and `subject`, the row's `version`, and `dpop_proofs` when asked for. The
    /// route answers it and `tokenbroker client token` prints it.
    static func appToken(_ t: IssuedAppToken) -> [UInt8] {
        var w = JSONWriter(capacity: t.accessToken.utf8.count + 256 + t.dpopProofs.reduce(0) { $0 + $1.utf8.count + 4 })
        w.beginObject()
        w.string("access_token", t.accessToken)
        w.string("token_type", t.tokenType.rawValue)
        w.time("expires_at", t.expiresAt, millis: true)
        w.int("expires_in", t.expiresIn)
        w.string("scope", Scopes.format(t.scope))
        w.string("client", t.client)
        w.int("version", Int(t.version))
        if !t.dpopProofs.isEmpty {
            w.key("dpop_proofs")
            w.beginArray()
            for p in t.dpopProofs { w.string(p) }
            w.endArray()
        }
        w.endObject()
        return w.bytes
    }
}
