import BrokerOIDC
import Foundation
import Testing

/// BlockingHTTP over TLS against a real server (`openssl s_server`), with certificates made by
/// the openssl CLI in a folder of the test's own: the deployment's CA file parsed once and read
/// again when replaced, a client's own anchors apart from it, sessions resumed on new
/// connections, and refusals that name the certificate problem.
@Suite(.serialized)
struct ProviderTLSTests {
    /// A CA and a server certificate for localhost / 127.0.0.1 signed by it.
    struct PKI {
        let dir: URL
        init() throws {
            dir = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for ca in ["ca1", "ca2"] {
                try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                             "-keyout", path("\(ca).key"), "-out", path("\(ca).pem"), "-subj", "/CN=\(ca)"])
            }
            try "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".write(toFile: path("srv.ext"), atomically: true, encoding: .utf8)
            try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("srv.key"),
                         "-out", path("srv.csr"), "-subj", "/CN=localhost"])
            try openssl(["x509", "-req", "-in", path("srv.csr"), "-CA", path("ca1.pem"), "-CAkey", path("ca1.key"), "-CAcreateserial",
                         "-days", "2", "-extfile", path("srv.ext"), "-out", path("srv.pem")])
        }
        func path(_ f: String) -> String { dir.appendingPathComponent(f).path }
        func pem(_ f: String) throws -> String { try String(contentsOfFile: path(f), encoding: .utf8) }

        private func openssl(_ args: [String]) throws { try OpenSSLCLI.run(args) }
    }

    /// `openssl s_server -www`: answers each GET with a status page, one connection at a time,
    /// HTTP/1.0 (so every request is a new connection, which is what resumption needs). It
    /// listens on a port the kernel picks and names it on its first line (`ACCEPT 127.0.0.1:N`),
    /// so no port is guessed and the server is ready once that line is read.
    final class Server {
        let process = Process()
        let port: UInt16
        /// Its output, kept open for as long as it runs (a closed pipe would end it with SIGPIPE).
        let output = Pipe()
        init(_ pki: PKI) throws {
            let out = output
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", pki.path("srv.pem"), "-key", pki.path("srv.key"), "-www"]
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            port = try Self.acceptedPort(out.fileHandleForReading)
            // The rest of its output is read and dropped, so a full pipe never stalls it.
            let fd = out.fileHandleForReading.fileDescriptor
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = read(fd, &buffer, buffer.count)
                    if n > 0 || (n < 0 && errno == EINTR) { continue }
                    break
                }
            }
        }

        /// Reads up to the `ACCEPT host:port` line; the end of the output first means it exited.
        /// Plain read(2), tried again when a signal interrupts it (a child of another test ending).
        private static func acceptedPort(_ output: FileHandle) throws -> UInt16 {
            var line = [UInt8](), byte: UInt8 = 0
            while true {
                let n = read(output.fileDescriptor, &byte, 1)
                if n < 0, errno == EINTR { continue }
                guard n == 1 else { break }
                if byte != UInt8(ascii: "\n") { line.append(byte); continue }
                let text = String(decoding: line, as: UTF8.self)
                if text.hasPrefix("ACCEPT "), let port = text.split(separator: ":").last.flatMap({ UInt16($0) }) { return port }
                line.removeAll()
            }
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl s_server exited before listening"])
        }

        var url: URL { URL(string: "https://localhost:\(port)/")! }
        deinit { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }

    private func get(_ http: BlockingHTTP, _ url: URL, trust: ProviderTrust = .deployment) -> Result<Int, BlockingHTTP.Failure> {
        do { return .success(try http.send("GET", url, headers: [], trust: trust).status) } catch { return .failure(error) }
    }

    private func refusal(_ r: Result<Int, BlockingHTTP.Failure>) -> String? {
        if case .failure(.certificateRefused(let why)) = r { return why }
        return nil
    }

    @Test("the deployment's CA file is trusted, read once; new connections resume the host's TLS session")
    func deploymentTrustAndResumption() throws {
        let pki = try PKI()
        let server = try Server(pki)
        let http = BlockingHTTP(timeout: 5, settings: HTTPConnectionSettings(caFile: pki.path("ca1.pem")))
        for _ in 0..<3 { #expect(try get(http, server.url).get() == 200) }
        let c = http.counts
        #expect(c.opened == 3 && c.fullHandshakes == 1 && c.resumedHandshakes == 2, "\(c)")
        #expect(c.caReloads == 0 && c.caLoadFailures == 0)
    }

    @Test("a host whose kept connections were all closed still resumes its TLS session on a new one")
    func resumedAfterEviction() throws {
        let pki = try PKI()
        let server = try Server(pki)
        var settings = HTTPConnectionSettings(caFile: pki.path("ca1.pem"))
        settings.idleTotal = 1   // one idle handle in all: each destination's evicts the other's
        let http = BlockingHTTP(timeout: 5, settings: settings)
        let other = URL(string: "https://127.0.0.1:\(server.port)/")!   // the same server, another destination
        for _ in 0..<2 {
            #expect(try get(http, server.url).get() == 200)
            #expect(try get(http, other).get() == 200)
        }
        let c = http.counts
        #expect(c.opened == 4 && c.fullHandshakes == 2 && c.resumedHandshakes == 2, "\(c)")
    }

    @Test("a certificate from a CA the deployment does not trust is refused, naming why")
    func untrustedIsRefused() throws {
        let pki = try PKI()
        let server = try Server(pki)
        let http = BlockingHTTP(timeout: 5, settings: HTTPConnectionSettings(caFile: pki.path("ca2.pem")))
        let why = refusal(get(http, server.url))
        #expect(why?.contains("local issuer") == true, "\(String(describing: why))")
        // And the system bundle does not know the test CA either.
        #expect(refusal(get(BlockingHTTP(timeout: 5), server.url)) != nil)
    }

    @Test("a client's own anchors replace the deployment's trust for its requests only")
    func clientAnchors() throws {
        let pki = try PKI()
        let server = try Server(pki)
        let http = BlockingHTTP(timeout: 5, settings: HTTPConnectionSettings(caFile: pki.path("ca2.pem")))
        #expect(try get(http, server.url, trust: ProviderTrust(anchorsPEM: try pki.pem("ca1.pem"))).get() == 200)
        // Another client's anchors, and the deployment's trust, still refuse the server.
        #expect(refusal(get(http, server.url, trust: ProviderTrust(anchorsPEM: try pki.pem("ca2.pem")))) != nil)
        #expect(refusal(get(http, server.url)) != nil)
    }

    @Test("a replaced CA file is used without a restart; a file that no longer parses keeps the last good one")
    func replacedCAFile() throws {
        let pki = try PKI()
        let server = try Server(pki)
        let bundle = pki.path("bundle.pem")
        try FileManager.default.copyItem(atPath: pki.path("ca2.pem"), toPath: bundle)
        let http = BlockingHTTP(timeout: 5, settings: HTTPConnectionSettings(caFile: bundle))
        #expect(refusal(get(http, server.url)) != nil)
        // Replaced as deployment tools do: a new file renamed over the old one.
        try FileManager.default.copyItem(atPath: pki.path("ca1.pem"), toPath: bundle + ".new")
        #expect(rename(bundle + ".new", bundle) == 0)
        Thread.sleep(forTimeInterval: 1.1)   // the file is looked at no more than once a second
        #expect(try get(http, server.url).get() == 200)
        #expect(http.counts.caReloads == 1)
        try "not a certificate\n".write(toFile: bundle + ".new", atomically: false, encoding: .utf8)
        #expect(rename(bundle + ".new", bundle) == 0)
        Thread.sleep(forTimeInterval: 1.1)
        #expect(try get(http, server.url).get() == 200)
        #expect(http.counts.caLoadFailures == 1)
    }
}
