import BrokerCore
import Foundation
import Testing

/// Whether a change feed delivers, judged by the canaries a replica sends itself.
@Suite("Change feed canaries")
struct CanaryWatchTests {
    let t0 = Date(timeIntervalSince1970: 1_000_000)

    @Test("canaries that come back keep the feed alive")
    func delivered() {
        var w = CanaryWatch(bound: 6)
        for i in 0..<10 {
            let n = w.send(at: t0 + Double(i) * 2)
            #expect(w.delivered(n) == nil)
            #expect(w.check(at: t0 + Double(i) * 2 + 1.9) == nil)
        }
        #expect(w.alive)
    }

    @Test("a canary not back within the bound: dead, said once")
    func deadAfterTheBound() {
        var w = CanaryWatch(bound: 6)
        _ = w.send(at: t0)
        #expect(w.check(at: t0 + 6) == nil)
        _ = w.send(at: t0 + 2)
        #expect(w.check(at: t0 + 6.5) == .died(waited: 6.5))
        #expect(!w.alive)
        _ = w.send(at: t0 + 8)
        #expect(w.check(at: t0 + 20) == nil)
    }

    @Test("a later canary back settles the earlier ones, lost or not: alive again")
    func recovery() {
        var w = CanaryWatch(bound: 6)
        _ = w.send(at: t0)
        _ = w.check(at: t0 + 7)
        let n = w.send(at: t0 + 8)
        #expect(w.delivered(n) == .recovered)
        #expect(w.alive && w.check(at: t0 + 30) == nil)
    }

    @Test("one canary lost while later ones come back: never dead")
    func oneLost() {
        var w = CanaryWatch(bound: 6)
        _ = w.send(at: t0)                 // lost (the listener was reconnecting)
        let second = w.send(at: t0 + 2)
        #expect(w.delivered(second) == nil)
        #expect(w.check(at: t0 + 10) == nil && w.alive)
    }

    @Test("a canary that could not be sent (the database unreachable) proves nothing")
    func unsent() {
        var w = CanaryWatch(bound: 6)
        let n = w.send(at: t0)
        w.unsent(n)
        #expect(w.check(at: t0 + 60) == nil && w.alive)
    }

    @Test("canaries sent before the listener connected again (a database outage) prove nothing of the new connection")
    func reconnected() {
        var w = CanaryWatch(bound: 6)
        _ = w.send(at: t0)                 // just before the outage: lost with the old connection
        #expect(w.listening() == nil)      // back at t0 + 10
        #expect(w.check(at: t0 + 10.5) == nil && w.alive)
    }

    @Test("a listening connection opened again (a failover) counts as alive only once a canary comes back through it")
    func unprovenAfterReconnect() {
        var w = CanaryWatch(bound: 6)
        #expect(w.delivered(w.send(at: t0)) == nil)
        #expect(w.listening(again: true) == .unproven)
        #expect(!w.alive && w.check(at: t0 + 20) == nil)
        #expect(w.delivered(w.send(at: t0 + 20)) == .recovered)
        #expect(w.alive)
    }

    @Test("a connection opened again whose canaries never come back (a LISTEN through a pooler): dead, said once")
    func unprovenThenDead() {
        var w = CanaryWatch(bound: 6)
        _ = w.listening(again: true)
        _ = w.send(at: t0)
        #expect(w.check(at: t0 + 7) == .died(waited: 7))
        #expect(w.listening(again: true) == nil && !w.alive)
        _ = w.send(at: t0 + 8)
        #expect(w.check(at: t0 + 20) == .none)
    }
}
