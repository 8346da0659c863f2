import BrokerCore
import Foundation

/// BrokerKeyStoreContract: the broker's keys are one current key, whoever makes it first —
/// a second replica's key is not stored, and both then sign with the first.
public enum BrokerKeyStoreContract {
    public static func run(_ store: any BrokerKeyStore) throws {
        try Contract.expect(try store.keys().isEmpty, "a fresh store has keys")
        let first = BrokerKey(kid: "kid-1", algorithm: .es256, der: [1, 2, 3], createdAt: Contract.t0)
        let second = BrokerKey(kid: "kid-2", algorithm: .es256, der: [4, 5, 6], createdAt: Contract.t0.addingTimeInterval(1))
        try Contract.expect(try store.addCurrent(first) == first, "the first key is not the current one")
        try Contract.expect(try store.addCurrent(second) == first, "a second current key replaced the first")
        try Contract.expect(try store.keys() == [first], "the keys are not exactly the current one")
    }
}
