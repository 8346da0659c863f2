import CCurlShim
import Foundation
import Synchronization

/// TrustStore is the deployment's CA bundle for provider connections, parsed once into one
/// OpenSSL store that every new connection shares (parsing the system bundle costs about 20 ms
/// of CPU, which libcurl would spend on each new TLS connection). It is read at the first HTTPS
/// request and read again when the file changes (another inode, size or modification time,
/// looked at no more than once a second), without a restart: connections already made keep the
/// trust they were verified with. A file that no longer parses leaves the current store in place.
final class TrustStore: Sendable {
    /// What a file looked like when it was read.
    private struct Stamp: Equatable {
        let inode: UInt64
        let size: Int64
        let modified: Int64
    }

    private struct State {
        var stamp: Stamp?
        var checked: ContinuousClock.Instant?
        var loaded = false
    }

    /// The C store, handed to libcurl's SSL context callback; swapped inside by `tb_http_trust_load`.
    nonisolated(unsafe) let pointer: OpaquePointer
    let path: String
    private let state = Mutex(State())
    private let clock = ContinuousClock()
    private let reloads = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)

    init(path: String) {
        self.path = path
        pointer = tb_http_trust_new()
    }

    /// Reads the file when it was never read or has changed since. Called before each HTTPS request.
    func refresh() {
        let now = clock.now
        state.withLock { s in
            if s.loaded, let c = s.checked, now - c < .seconds(1) { return }
            s.checked = now
            let stamp = Self.stamp(path)
            guard !s.loaded || stamp != s.stamp else { return }
            s.stamp = stamp
            if tb_http_trust_load(pointer, path) > 0 {
                if s.loaded { reloads.add(1, ordering: .relaxed) }
                s.loaded = true
            } else {
                failures.add(1, ordering: .relaxed)
            }
        }
    }

    /// Times the file was read again after a change, and times it could not be read.
    var reloaded: Int { reloads.load(ordering: .relaxed) }
    var failed: Int { failures.load(ordering: .relaxed) }

    private static func stamp(_ path: String) -> Stamp? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Stamp(inode: UInt64(st.st_ino), size: Int64(st.st_size),
                     modified: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
    }

    /// The number of certificates in a PEM bundle, nil when it cannot be read or holds none
    /// (a configuration check before anything starts).
    static func certificates(in path: String) -> Int? {
        let t = tb_http_trust_new()
        defer { tb_http_trust_free(t) }
        let n = tb_http_trust_load(t, path)
        return n > 0 ? Int(n) : nil
    }

    /// The system bundle: Debian's, or OpenSSL's default file elsewhere.
    static let systemBundle: String = {
        for p in ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
        where FileManager.default.fileExists(atPath: p) { return p }
        return "/etc/ssl/certs/ca-certificates.crt"
    }()
}
