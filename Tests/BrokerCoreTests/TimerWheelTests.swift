import BrokerCore
import Foundation
import Testing

@Suite("Timer wheel")
struct TimerWheelTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("timers fire in deadline order, none before its deadline, at most one tick late")
    func orderAndNeverEarly() {
        var w = TimerWheel<Int>(origin: t0, tickSeconds: 0.1)
        let offsets: [TimeInterval] = [5, 0.05, 30, 0.3, 1000, 25.61, 0.1]
        for (i, o) in offsets.enumerated() { w.schedule(i, at: t0 + o) }
        var fired: [(Int, Date)] = []
        var now = t0
        while fired.count < offsets.count {
            now += 0.05
            for p in w.advance(to: now) { fired.append((p, now)) }
        }
        #expect(fired.map(\.0) == offsets.enumerated().sorted { $0.element < $1.element }.map(\.offset))
        for (i, at) in fired {
            #expect(at >= t0 + offsets[i], "timer \(i) fired early")
            #expect(at.timeIntervalSince(t0 + offsets[i]) <= 0.1 + 0.05 + 1e-9, "timer \(i) fired more than a tick late")
        }
        #expect(w.count == 0)
    }

    @Test("a cancelled timer never fires; stale handles cancel nothing")
    func cancel() {
        var w = TimerWheel<String>(origin: t0, tickSeconds: 1)
        let a = w.schedule("a", at: t0 + 10), b = w.schedule("b", at: t0 + 10)
        let first = w.cancel(a), again = w.cancel(a)
        #expect(first && !again)
        let fired = w.advance(to: t0 + 20)
        #expect(fired == ["b"])
        let late = w.cancel(b)
        #expect(!late && !w.isPending(b))
        let c = w.schedule("c", at: t0 + 30)          // reuses a slot: the old handles stay stale
        let stale = w.cancel(a)
        #expect(!stale && w.isPending(c))
    }

    @Test("far-future timers, past every level and the overflow, fire on time")
    func farFuture() {
        var w = TimerWheel<Int>(origin: t0, tickSeconds: 1)
        let deadlines: [Int64] = [255, 256, 16_383, 16_384, 1 << 20, (1 << 26) - 1, 1 << 26, (1 << 27) + 12_345]
        for (i, d) in deadlines.enumerated() { w.schedule(i, atTick: d) }
        var fired: [Int: Int64] = [:]
        // Jump between interesting ticks; advance walks every tick in between.
        for target in deadlines.flatMap({ [$0 - 1, $0] }).sorted() {
            for p in w.advance(toTick: target) { fired[p] = w.current }
        }
        for (i, d) in deadlines.enumerated() { #expect(fired[i] == d, "timer at tick \(d) fired at \(fired[i] ?? -1)") }
    }

    @Test("a deadline already past fires at the next advance, not before")
    func pastDeadline() {
        var w = TimerWheel<Int>(origin: t0, tickSeconds: 1)
        _ = w.advance(toTick: 100)
        w.schedule(1, at: t0 + 5)
        let same = w.advance(toTick: 100), next = w.advance(toTick: 101)
        #expect(same.isEmpty && next == [1])
    }

    @Test("deadlines round up to a tick and instants round down")
    func rounding() {
        let w = TimerWheel<Int>(origin: t0, tickSeconds: 0.5)
        #expect(w.tick(for: t0 + 1.2) == 3)
        #expect(w.reached(t0 + 1.2) == 2)
    }
}

@Suite("Timer wheel against a reference model")
struct TimerWheelModelTests {
    /// SplitMix64: a seeded generator, so that a failure reproduces.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test("random schedules, cancels and jumps fire exactly what a sorted list says", arguments: [1, 2, 3, 4])
    func matchesReference(seed: Int) {
        var rng = SplitMix(state: UInt64(seed))
        var w = TimerWheel<Int>(origin: Date(timeIntervalSince1970: 0), tickSeconds: 1)
        var pending: [Int: (tick: Int64, handle: TimerWheel<Int>.Handle)] = [:]
        var nextID = 0
        for _ in 0..<400 {
            for _ in 0..<Int.random(in: 0...20, using: &rng) {
                let span: Int64 = [300, 20_000, 2_000_000, 200_000_000][Int.random(in: 0...3, using: &rng)]
                let t = w.current + 1 + Int64.random(in: 0..<span, using: &rng)
                pending[nextID] = (t, w.schedule(nextID, atTick: t))
                nextID += 1
            }
            if let victim = pending.keys.randomElement(using: &rng), Bool.random(using: &rng) {
                let cancelled = w.cancel(pending[victim]!.handle)
                #expect(cancelled)
                pending[victim] = nil
            }
            let target = w.current + [1, 100, 5_000, 3_000_000][Int.random(in: 0...3, using: &rng)]
            let fired = w.advance(toTick: target)
            let due = pending.filter { $0.value.tick <= target }.sorted { ($0.value.tick, $0.key) < ($1.value.tick, $1.key) }
            #expect(Set(fired) == Set(due.map(\.key)))
            #expect(fired.map { pending[$0]!.tick } == due.map(\.value.tick), "fired out of deadline order")
            for id in fired { pending[id] = nil }
            #expect(w.count == pending.count)
        }
    }
}
