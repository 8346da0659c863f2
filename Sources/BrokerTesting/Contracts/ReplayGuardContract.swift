import BrokerCore
import Foundation

/// ReplayGuardContract: a token id is accepted once per issuer (two issuers never share ids)
/// until it is purged; asking whether it was seen spends nothing.
public enum ReplayGuardContract {
    public static func run(_ guard_: any ReplayGuard) throws {
        let jti = Contract.unique("jti"), a = Contract.unique("https://a"), b = Contract.unique("https://b")
        let until = Contract.t0.addingTimeInterval(120)
        try Contract.expect(try !guard_.seen(issuer: a, jti: jti), "a token id never used is said to be seen")
        try Contract.expect(try guard_.firstUse(issuer: a, jti: jti, until: until), "a new token id was refused")
        try Contract.expect(try guard_.seen(issuer: a, jti: jti), "a used token id is not said to be seen")
        try Contract.expect(try !guard_.seen(issuer: b, jti: jti), "another issuer's use of a token id is said to be seen")
        try Contract.expect(try !guard_.firstUse(issuer: a, jti: jti, until: until), "a token id was accepted twice")
        try Contract.expect(try guard_.firstUse(issuer: b, jti: jti, until: until), "another issuer's token id was taken for a replay")
        try guard_.purge(before: until.addingTimeInterval(1))
        try Contract.expect(try guard_.firstUse(issuer: a, jti: jti, until: until), "a purged id is still remembered")
    }
}
