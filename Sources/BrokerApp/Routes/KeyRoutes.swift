import Broker
import BrokerCore
import BrokerHTTP

/// The broker's public keys (RFC 7517 §5), on the public listener: IdPs verify the actor tokens
/// of delegated exchanges (RFC 8693 §4.1) with them. No authentication, no tenant data.
struct KeyRoutes {
    let gate: Guard
    let actors: ActorTokens

    func register(_ r: inout Router) {
        r.add("GET", "/.well-known/jwks.json") { req in
            gate.later(req) {
                let keys = try actors.jwks().map { k in
                    JSONText.object(k.members.sorted { $0.key < $1.key }.map { ($0.key, JSONText.quote($0.value)) })
                }
                var r = HTTPResponse.json(200, "{\"keys\":[" + keys.joined(separator: ",") + "]}")
                r.headers.append(("Cache-Control", "public, max-age=300"))
                return r
            }
        }
    }
}
