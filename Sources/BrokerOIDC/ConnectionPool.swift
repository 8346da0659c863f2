import CCurlShim
import Foundation
import Synchronization

/// ConnectionPool keeps idle libcurl easy handles per destination. Each handle holds at most one
/// connection, so the idle handles of a destination are its idle connections; the destination's
/// TLS sessions (and DNS answers) are kept apart from them (`Sessions`), so that any new
/// connection to it — from a new handle, after its connections were closed — resumes a session
/// instead of a full handshake. A
/// destination is (scheme, host, port, trust, client certificate, address check): a connection
/// verified under one client's trust anchors never serves a request made under other trust, and
/// one that presented a client's certificate (RFC 8705) never serves another client's request —
/// nor does its TLS session resume for one (sessions are kept per destination).
///
/// Bounds: at most `idlePerHost` idle handles per destination and `idleTotal` in all; beyond
/// either, the handle idle the longest is closed. Handles idle for longer than `maxIdle` are
/// closed at the next sweep. Thread-safety: any thread; a handle is used by one thread at a time
/// (it is out of the pool while in use).
final class ConnectionPool: Sendable {
    struct Destination: Hashable, Sendable {
        let scheme: String
        let host: String
        let port: Int
        let trust: ProviderTrust
        /// The `x5t#S256` of the client certificate the connection presents; nil: none.
        let clientCertificate: String?
        let publicOnly: Bool

        init(_ url: URL, trust: ProviderTrust, publicOnly: Bool) {
            scheme = url.scheme?.lowercased() ?? ""
            host = url.host?.lowercased() ?? ""
            port = url.port ?? (scheme == "https" ? 443 : 80)
            self.trust = trust
            clientCertificate = trust.clientCertificate?.thumbprint
            self.publicOnly = publicOnly
        }
    }

    /// A destination's libcurl share: its TLS sessions and DNS answers. Freed after the last
    /// handle using it (each handle holds it).
    final class Sessions: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer?
        init() { pointer = tb_http_share_new() }
        deinit { tb_http_share_free(pointer) }
    }

    /// A libcurl easy handle; used by one thread at a time (the pool hands it out).
    final class Handle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        /// How long its connection may stay idle: the server's `Keep-Alive` timeout when it sent
        /// one (less a second), within the pool's keep-alive.
        var maxIdle: TimeInterval
        private let sessions: Sessions
        init(maxIdle: TimeInterval, sessions: Sessions) {
            self.sessions = sessions
            pointer = tb_http_handle_new(sessions.pointer)
            self.maxIdle = maxIdle
        }
        deinit { tb_http_handle_free(pointer) }   // before `sessions` is released

        /// Learns how long the server keeps an idle connection: a second less than its
        /// `Keep-Alive: timeout=`, so that a connection it is about to close is not reused (a
        /// request sent as it closes would be unanswered), within `limit`.
        func learn(keepAliveTimeout seconds: Int, within limit: TimeInterval) {
            maxIdle = max(1, min(limit, TimeInterval(seconds - 1)))
        }
    }

    private struct Idle {
        let handle: Handle
        let since: ContinuousClock.Instant
    }

    private struct State {
        var idle: [Destination: [Idle]] = [:]
        /// Sessions of the destinations seen last (at most `maxDestinations`), and when.
        var sessions: [Destination: (Sessions, ContinuousClock.Instant)] = [:]
        var count = 0
        var lastSweep: ContinuousClock.Instant
    }

    private let state: Mutex<State>
    private let settings: HTTPConnectionSettings
    private let clock = ContinuousClock()
    /// Handles idle for longer than this are closed (their TLS sessions are likely expired too).
    private let maxIdle: Duration

    init(settings: HTTPConnectionSettings) {
        self.settings = settings
        maxIdle = .seconds(max(settings.keepAlive, 600))
        state = Mutex(State(lastSweep: clock.now))
    }

    /// Destinations whose TLS sessions are kept (a few KB each), beyond those with idle connections.
    private var maxDestinations: Int { max(4 * settings.idleTotal, 4096) }

    /// The destination's most recently used idle handle, or a new one sharing its sessions.
    func take(_ d: Destination) -> Handle {
        let now = clock.now
        var dropped: Sessions?
        let found = state.withLock { s -> Either in
            if let i = s.idle[d]?.popLast() {
                if s.idle[d]!.isEmpty { s.idle[d] = nil }
                s.count -= 1
                s.sessions[d]?.1 = now
                return .handle(i.handle)
            }
            if let (known, _) = s.sessions[d] {
                s.sessions[d] = (known, now)
                return .sessions(known)
            }
            let new = Sessions()
            s.sessions[d] = (new, now)
            if s.sessions.count > maxDestinations, let oldest = s.sessions.min(by: { $0.value.1 < $1.value.1 })?.key {
                dropped = s.sessions.removeValue(forKey: oldest)?.0   // its handles, if any, keep it alive
            }
            return .sessions(new)
        }
        _ = dropped   // released outside the lock
        switch found {
        case .handle(let h): return h
        case .sessions(let sessions): return Handle(maxIdle: settings.keepAlive, sessions: sessions)
        }
    }

    private enum Either {
        case handle(Handle)
        case sessions(Sessions)
    }

    /// Returns a handle after use. The handles closed to keep the bounds are released outside
    /// the lock (closing a TLS connection writes to it).
    func give(_ h: Handle, to d: Destination) {
        let now = clock.now
        var closed: [Handle] = []
        state.withLock { s in
            s.idle[d, default: []].append(Idle(handle: h, since: now))
            s.count += 1
            if s.idle[d]!.count > settings.idlePerHost {
                closed.append(s.idle[d]!.removeFirst().handle)
                s.count -= 1
            }
            if s.count > settings.idleTotal, let oldest = s.idle.min(by: { $0.value[0].since < $1.value[0].since })?.key {
                closed.append(s.idle[oldest]!.removeFirst().handle)
                s.count -= 1
                if s.idle[oldest]!.isEmpty { s.idle[oldest] = nil }
            }
            if now - s.lastSweep > .seconds(60) {
                s.lastSweep = now
                for (k, list) in s.idle {
                    let kept = list.filter { now - $0.since < maxIdle }
                    guard kept.count < list.count else { continue }
                    closed += list.filter { now - $0.since >= maxIdle }.map(\.handle)
                    s.count -= list.count - kept.count
                    s.idle[k] = kept.isEmpty ? nil : kept
                }
            }
        }
        _ = closed   // released here, outside the lock
    }

    /// Idle handles now, all destinations together.
    var idleCount: Int { state.withLock { $0.count } }
}
