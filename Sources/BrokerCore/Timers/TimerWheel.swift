import Foundation

/// TimerWheel is a hierarchical hashed timing wheel (Varghese & Lauck; the Linux timer wheel
/// layout): level 0 has 256 slots of one tick, levels 1-3 have 64 slots each covering 256, 16 Ki
/// and 1 Mi ticks; deadlines past level 3 (2^26 ticks) wait in an overflow list until they
/// come into range.
///
/// It is pure: no clock, no threads. `schedule` and `cancel` are O(1); `advance(to:)` moves the
/// wheel to a tick and returns the payloads whose deadline is at or before it, in deadline
/// order. A timer never fires before its deadline tick and, when the driver advances every
/// tick, at most one tick after the instant it was scheduled for (see `tick(for:)`).
///
/// Threading contract: not thread-safe. One owner (the refresh engine's serial queue) calls
/// every method. Storage is a slab of parallel arrays with intrusive doubly-linked bucket lists,
/// so a timer costs a few dozen bytes and no allocation once the slab has grown.
public struct TimerWheel<Payload> {
    /// A scheduled timer; stale handles (fired or cancelled) are recognised by their generation.
    public struct Handle: Hashable, Sendable {
        let index: Int32
        let generation: UInt32
    }

    private static func shift(_ level: Int) -> Int64 { level == 0 ? 0 : Int64(2 + 6 * level) }
    private static func mask(_ level: Int) -> Int64 { level == 0 ? 255 : 63 }
    private static var overflowBucket: Int32 { 256 + 64 * 3 }

    public let origin: Date
    public let tickSeconds: TimeInterval
    /// The last tick advanced to.
    public private(set) var current: Int64 = 0
    public private(set) var count = 0

    // Slab: one entry per timer slot, reused through `free`.
    private var deadline: [Int64] = []
    private var next: [Int32] = []
    private var prev: [Int32] = []
    private var bucketOf: [Int32] = []
    private var generation: [UInt32] = []
    private var payload: [Payload?] = []
    private var free: [Int32] = []
    // Bucket heads: level 0 slots, then levels 1-3, then the overflow list.
    private var heads: [Int32]

    public init(origin: Date, tickSeconds: TimeInterval) {
        precondition(tickSeconds > 0)
        self.origin = origin
        self.tickSeconds = tickSeconds
        heads = Array(repeating: -1, count: Int(Self.overflowBucket) + 1)
    }

    /// The tick a deadline belongs to: rounded up, so that firing at that tick is never early.
    public func tick(for date: Date) -> Int64 {
        Int64((date.timeIntervalSince(origin) / tickSeconds).rounded(.up))
    }

    /// The tick an instant has reached: rounded down.
    public func reached(_ now: Date) -> Int64 {
        Int64((now.timeIntervalSince(origin) / tickSeconds).rounded(.down))
    }

    /// Schedules `payload` at `date`; a deadline already past fires at the next advance.
    @discardableResult
    public mutating func schedule(_ payload: Payload, at date: Date) -> Handle {
        schedule(payload, atTick: tick(for: date))
    }

    @discardableResult
    public mutating func schedule(_ p: Payload, atTick t: Int64) -> Handle {
        let i: Int32
        if let reused = free.popLast() {
            i = reused
            payload[Int(i)] = p
            deadline[Int(i)] = max(t, current + 1)
        } else {
            i = Int32(deadline.count)
            deadline.append(max(t, current + 1))
            next.append(-1)
            prev.append(-1)
            bucketOf.append(-1)
            generation.append(0)
            payload.append(p)
        }
        link(i)
        count += 1
        return Handle(index: i, generation: generation[Int(i)])
    }

    /// Cancels a timer; false when it already fired or was cancelled.
    @discardableResult
    public mutating func cancel(_ h: Handle) -> Bool {
        let i = Int(h.index)
        guard i < generation.count, generation[i] == h.generation, bucketOf[i] >= 0 else { return false }
        unlink(h.index)
        release(h.index)
        return true
    }

    /// Whether the handle's timer is still pending.
    public func isPending(_ h: Handle) -> Bool {
        let i = Int(h.index)
        return i < generation.count && generation[i] == h.generation && bucketOf[i] >= 0
    }

    /// Advances to `tick` and returns the payloads that expired, earliest deadline first.
    /// Stretches where nothing fires or cascades are skipped, so a long jump costs no more than
    /// the timers it touches plus a scan of the slots.
    public mutating func advance(toTick target: Int64) -> [Payload] {
        var fired: [Payload] = []
        while current < target {
            guard count > 0, let event = nextEvent(), event <= target else {
                current = target
                break
            }
            current = event
            // Cascade higher levels whose slot begins at this tick, highest first.
            if current & ((1 << 26) - 1) == 0 { cascade(Self.overflowBucket) }
            for level in stride(from: 3, through: 1, by: -1) where current & ((1 << Self.shift(level)) - 1) == 0 {
                cascade(bucket(level: level, tick: current))
            }
            let b = bucket(level: 0, tick: current)
            var i = heads[Int(b)]
            while i >= 0 {
                let n = next[Int(i)]
                unlink(i)
                fired.append(payload[Int(i)]!)
                release(i)
                i = n
            }
        }
        return fired
    }

    /// The first tick after `current` at which a level-0 slot fires or a non-empty slot of a
    /// higher level (or the overflow list) cascades.
    private func nextEvent() -> Int64? {
        var best: Int64?
        var t = current + 1
        while t <= current | 255 {
            if heads[Int(bucket(level: 0, tick: t))] >= 0 {
                best = t
                break
            }
            t += 1
        }
        for level in 1...3 {
            let unit: Int64 = 1 << Self.shift(level)
            var boundary = (current / unit + 1) * unit
            for _ in 0..<64 {
                if let b = best, boundary >= b { break }
                if heads[Int(bucket(level: level, tick: boundary))] >= 0 {
                    best = boundary
                    break
                }
                boundary += unit
            }
        }
        if heads[Int(Self.overflowBucket)] >= 0 {
            let boundary = (current / (1 << 26) + 1) * (1 << 26)
            best = min(best ?? boundary, boundary)
        }
        return best
    }

    /// Advances to the tick `now` has reached.
    public mutating func advance(to now: Date) -> [Payload] { advance(toTick: reached(now)) }

    // MARK: internals

    private func bucket(level: Int, tick: Int64) -> Int32 {
        let base = level == 0 ? 0 : 256 + 64 * (level - 1)
        return Int32(base + Int((tick >> Self.shift(level)) & Self.mask(level)))
    }

    /// The bucket of deadline `d` as seen from `current`: the lowest level whose next-higher
    /// block contains both.
    private func bucket(for d: Int64) -> Int32 {
        if d >> 8 == current >> 8 { return bucket(level: 0, tick: d) }
        if d >> 14 == current >> 14 { return bucket(level: 1, tick: d) }
        if d >> 20 == current >> 20 { return bucket(level: 2, tick: d) }
        if d >> 26 == current >> 26 { return bucket(level: 3, tick: d) }
        return Self.overflowBucket
    }

    private mutating func link(_ i: Int32) {
        let b = bucket(for: deadline[Int(i)])
        bucketOf[Int(i)] = b
        prev[Int(i)] = -1
        next[Int(i)] = heads[Int(b)]
        if heads[Int(b)] >= 0 { prev[Int(heads[Int(b)])] = i }
        heads[Int(b)] = i
    }

    private mutating func unlink(_ i: Int32) {
        let b = bucketOf[Int(i)], p = prev[Int(i)], n = next[Int(i)]
        if p >= 0 { next[Int(p)] = n } else { heads[Int(b)] = n }
        if n >= 0 { prev[Int(n)] = p }
        bucketOf[Int(i)] = -1
    }

    private mutating func release(_ i: Int32) {
        payload[Int(i)] = nil
        generation[Int(i)] &+= 1
        free.append(i)
        count -= 1
    }

    /// Re-files every timer of bucket `b` relative to the current tick.
    private mutating func cascade(_ b: Int32) {
        var i = heads[Int(b)]
        heads[Int(b)] = -1
        while i >= 0 {
            let n = next[Int(i)]
            link(i)
            i = n
        }
    }
}
