import Foundation

/// ClientCircuit keeps one client's IdP from being called by every session and every request
/// while it is failing: after a failure no call goes out until the IdP's Retry-After
/// (or an exponential backoff without one) has passed; then exactly one call probes, and the
/// circuit closes when it succeeds.
///
/// While open it answers what opened it: an outage `idp_unavailable`, a refusal of the client
/// itself (`refusal`, e.g. `idp_client_rejected`) that refusal — an operator reading 503 would
/// wait for an IdP that is up and refusing the registration. A refusal is fixed by changing the
/// registration, and ClientCircuits drops the circuit (`forget`) on every replica when it changes.
///
/// A value: the driver keeps one per client behind a lock. Time is an argument.
public struct ClientCircuit: Sendable, Equatable {
    public private(set) var failures = 0
    public private(set) var openUntil: Date?
    /// A probe is out since then (others wait for it).
    public private(set) var probeSince: Date?
    /// The error callers get while the circuit is open after the IdP refused the client (nil:
    /// an outage, answered `idp_unavailable`).
    public private(set) var refusal: BrokerError?
    let retry: RetryPolicy

    public init(retry: RetryPolicy = RetryPolicy()) { self.retry = retry }

    /// Nil: the caller may call the IdP now (after failures, as the probe: `isProbe` then says
    /// so, and it must report back or `release`). Else the instant before which it must not.
    public mutating func admit(now: Date) -> (blockedUntil: Date?, isProbe: Bool) {
        guard failures > 0 else { return (nil, false) }
        if let until = blockedUntil(now: now) { return (until, false) }
        probeSince = now
        return (nil, true)
    }

    /// The instant before which no call may go out, without taking the probe.
    public func blockedUntil(now: Date) -> Date? {
        guard failures > 0 else { return nil }
        if let until = openUntil, now < until { return until }
        // A probe that never reported back is taken over after its own patience would have ended.
        if let p = probeSince, now.timeIntervalSince(p) < 150 { return now.addingTimeInterval(1) }
        return nil
    }

    /// The probe taken by `admit` made no call after all.
    public mutating func release() { probeSince = nil }

    public mutating func succeeded() {
        failures = 0
        openUntil = nil
        probeSince = nil
        refusal = nil
    }

    /// Opens the circuit: for `retryAfter` seconds when the IdP said so (RFC 9110 §10.2.3: it
    /// knows best), else for the (unjittered) backoff of the consecutive failures. `refusal`:
    /// the IdP refused the client itself, and callers are answered that while it is open.
    public mutating func failed(retryAfter: Int?, now: Date, refusal: BrokerError? = nil) {
        failures += 1
        probeSince = nil
        self.refusal = refusal
        let backoff = min(retry.cap, retry.base * pow(2, Double(failures - 1)))
        openUntil = now.addingTimeInterval(retryAfter.map { Double(max(1, $0)) } ?? backoff)
    }
}
