import BrokerCore
import Synchronization
import Testing

@Suite("Recent dictionary")
struct RecentDictionaryTests {
    /// A key that counts how often it is hashed.
    struct Counted: Hashable, Sendable {
        static let hashes = Mutex(0)
        let name: String
        func hash(into hasher: inout Hasher) {
            Self.hashes.withLock { $0 += 1 }
            hasher.combine(name)
        }
        static var count: Int { hashes.withLock { $0 } }
    }

    @Test("the key found last is compared, not hashed; an insertion or a removal forgets it; values change in place")
    func recentKeySparesTheHash() {
        var d = RecentDictionary<Counted, Int>()
        let a = Counted(name: "a"), b = Counted(name: "b")
        d.set(a, 1)
        d.set(b, 2)
        let start = Counted.count
        let i = d.index(forKey: a)
        #expect(i != nil && Counted.count == start + 1)
        for _ in 0..<5 { #expect(d.index(forKey: a) == i) }
        #expect(Counted.count == start + 1, "asked again: compared with the remembered entry")
        d[at: i!] += 10
        #expect(d.value(forKey: a) == 11 && Counted.count == start + 1, "a value changed in place keeps the position")
        #expect(d.value(forKey: b) == 2 && Counted.count == start + 2, "another key is hashed")
        #expect(d.value(forKey: b) == 2 && Counted.count == start + 2)
        d.set(Counted(name: "c"), 3)
        let afterInsert = Counted.count
        #expect(d.value(forKey: b) == 2 && Counted.count == afterInsert + 1, "an insertion forgets the position")
        #expect(d.value(forKey: Counted(name: "z")) == nil)
        #expect(d.count == 3 && d.storage[a] == 11)
        d.removeAll(keepingCapacity: true)
        #expect(d.isEmpty && d.value(forKey: b) == nil, "a removal forgets it too: no stale position")
    }
}
