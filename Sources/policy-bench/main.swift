import BrokerCore
import Foundation

/// policy-bench: IdP refreshes per hour that the refresh machine's own decisions cause, for
/// 100,000 sessions of which 1% are handed out (every 5 minutes), with 1-hour access tokens,
/// under the client's default policy (idle after three lifetimes, a keep-alive a day) and under
/// `idle_after_seconds: 0` (every session refreshed ahead of every expiry: the policy before).
///
/// Time is simulated: a heap holds each session's next event. A timer event runs
/// RefreshMachine.start(.due) and, when it sends, RefreshMachine.finish with the IdP's answer;
/// a hand-out marks the use and, when the token no longer satisfies min_ttl, runs
/// start(.demand) and finish — the decisions the engine and the token path take, without their
/// I/O. Counted: refresh tokens presented in the second simulated day (steady state).
struct Event: Comparable {
    let at: Date
    let session: Int
    let handOut: Bool
    static func < (a: Event, b: Event) -> Bool { a.at < b.at }
}

struct Heap {
    private var items: [Event] = []
    var isEmpty: Bool { items.isEmpty }

    mutating func push(_ e: Event) {
        items.append(e)
        var i = items.count - 1
        while i > 0, items[i] < items[(i - 1) / 2] {
            items.swapAt(i, (i - 1) / 2)
            i = (i - 1) / 2
        }
    }

    mutating func pop() -> Event {
        let top = items[0]
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < items.count, items[l] < items[m] { m = l }
                if r < items.count, items[r] < items[m] { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}

func simulate(_ policy: RefreshPolicy, sessions n: Int, usedEvery: Int, days: Double) -> (perHour: Double, demand: Int) {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let end = start.addingTimeInterval(days * 86_400), counted = end.addingTimeInterval(-86_400)
    let lifetime: TimeInterval = 3600, handOutEvery: TimeInterval = 300
    var rows: [Session] = []
    var heap = Heap()
    var rng = SystemRandomNumberGenerator()
    for i in 0..<n {
        let expires = start.addingTimeInterval(Double.random(in: 60...lifetime, using: &rng))
        let used = i % usedEvery == 0
        var s = Session(tenant: "t", id: "s\(i)", client: "c", subject: "u\(i)", issuer: "https://idp", scopes: ["openid"],
                        accessToken: "at", accessExpiresAt: expires, accessLifetime: lifetime, refreshToken: "rt", grantedAt: start.addingTimeInterval(-3600),
                        createdAt: start.addingTimeInterval(-3600), lastUsedAt: used ? start : nil, lastRefreshedAt: expires.addingTimeInterval(-lifetime))
        s.nextRefreshAt = policy.nextRefresh(issuedAt: expires.addingTimeInterval(-lifetime), expiresAt: expires, jitter: 0)
        rows.append(s)
        heap.push(Event(at: s.nextRefreshAt!, session: i, handOut: false))
        if used { heap.push(Event(at: start.addingTimeInterval(Double.random(in: 0...handOutEvery, using: &rng)), session: i, handOut: true)) }
    }
    let grant = TokenGrant(accessToken: "at", tokenType: .bearer, expiresIn: lifetime, refreshToken: "rt", scope: nil, idToken: nil)
    var sent = 0, demand = 0
    func refresh(_ i: Int, _ trigger: RefreshTrigger, now: Date) {
        let ctx = RefreshContext(now: now, policy: policy, jitter: Double.random(in: -1...1, using: &rng))
        switch RefreshMachine.start(rows[i], trigger, ctx, attemptID: "a") {
        case .send(let w, let attempt, _):
            if now >= counted { sent += 1; if case .demand = trigger { demand += 1 } }
            let f = RefreshMachine.finish(w, attempt: attempt, sentAt: now, outcome: .granted(grant, idToken: .valid), ctx)
            rows[i] = f.write ?? w
        case .rest(let w):
            rows[i] = w
        default:
            return
        }
        if let next = rows[i].nextRefreshAt { heap.push(Event(at: next, session: i, handOut: false)) }
    }
    while !heap.isEmpty {
        let e = heap.pop()
        guard e.at < end else { break }
        if e.handOut {
            rows[e.session].lastUsedAt = e.at
            let need = TokenRequirement(minTTL: 60)
            if case .refresh = TokenDecision.decide(rows[e.session], need, now: e.at) {
                refresh(e.session, .demand(seenVersion: rows[e.session].version, need: need), now: e.at)
            }
            heap.push(Event(at: e.at.addingTimeInterval(handOutEvery), session: e.session, handOut: true))
        } else if rows[e.session].nextRefreshAt == e.at {
            refresh(e.session, .due, now: e.at)       // (a stale event: the schedule moved since)
        }
    }
    return (Double(sent) / 24, demand)
}

let n = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 100_000
let idle = simulate(RefreshPolicy(), sessions: n, usedEvery: 100, days: 2)
let always = simulate(RefreshPolicy(idleAfter: 0), sessions: n, usedEvery: 100, days: 2)
let out: [String: Any] = [
    "policy_bench_sessions": n, "policy_bench_used_fraction": 0.01,
    "idle_policy_idp_refreshes_per_hour": Int(idle.perHour.rounded()), "idle_policy_demand_refreshes_per_day": idle.demand,
    "always_policy_idp_refreshes_per_hour": Int(always.perHour.rounded()),
]
print(String(decoding: try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys]), as: UTF8.self))
