import BrokerHTTP
import DevIdP
import Foundation

// dev-idp --listen 127.0.0.1:9000 [--issuer URL] [--access-ttl SECONDS] [--tls-cert FILE --tls-key FILE]
//         [--tls-client-ca FILE] [--issuer-hosts SUFFIX]
// --tls-client-ca: mutual TLS (RFC 8705): client certificates are asked for (optional) and
// verified against FILE; a self-signed client certificate is verified by being in FILE too.
var listen = "127.0.0.1:9000", issuer: String?, accessTTL = 3600, tlsCert: String?, tlsKey: String?, issuerHosts: String?
var clientCA: String?
var args = Array(CommandLine.arguments.dropFirst())
while !args.isEmpty {
    let a = args.removeFirst()
    guard let v = args.first else { FileHandle.standardError.write(Data("dev-idp: \(a) needs a value\n".utf8)); exit(2) }
    args.removeFirst()
    switch a {
    case "--listen": listen = v
    case "--issuer": issuer = v
    case "--access-ttl": accessTTL = Int(v) ?? 3600
    case "--tls-cert": tlsCert = v
    case "--tls-key": tlsKey = v
    case "--issuer-hosts": issuerHosts = v
    case "--tls-client-ca": clientCA = v
    default: FileHandle.standardError.write(Data("dev-idp: unknown option \(a)\n".utf8)); exit(2)
    }
}
guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
    FileHandle.standardError.write(Data("dev-idp: --listen must be host:port\n".utf8))
    exit(2)
}
guard (tlsCert == nil) == (tlsKey == nil) else {
    FileHandle.standardError.write(Data("dev-idp: --tls-cert and --tls-key go together\n".utf8))
    exit(2)
}
let host = String(listen[..<colon])
let scheme = tlsCert == nil ? "http" : "https"
guard clientCA == nil || tlsCert != nil else {
    FileHandle.standardError.write(Data("dev-idp: --tls-client-ca needs --tls-cert and --tls-key\n".utf8))
    exit(2)
}
let idp = DevIdP(issuer: issuer ?? "\(scheme)://\(host):\(port)", accessTTL: accessTTL, issuerHosts: issuerHosts, mutualTLS: clientCA != nil)
let router = idp.router()
var config = HTTPServerConfig(host: host, port: port, threads: 2)
// No cap per client address: a broker keeps a connection to each issuer host it talks to, and
// every issuer of --issuer-hosts is this one address (the default cap, 256, refused the 257th).
config.maxConnectionsPerClient = 0
config.headers += DevIdP.receiverHeaders   // the webhook test receiver reads the signature headers
config.headers += DevIdP.issuerHeaders
config.headers += DevIdP.personalityHeaders
if let tlsCert, let tlsKey {
    // Session tickets on: a provider's clients resume their TLS sessions (counted in /stats).
    config.tls = TLSConfig(certificateFile: tlsCert, keyFile: tlsKey, clientCAFile: clientCA, clientCertificateRequired: false,
                           sessionTickets: true)
}
// The protected resource's routes are streamed (bodies of any size, never held whole).
let server = MHDServer(config: config, streams: router) { req in
    switch router.match(method: req.method, path: req.path) {
    case .found(let h, let p, _):
        var r = req
        r.parameters = p
        return h(r)
    case .methodNotAllowed: return .now(.json(405, "{\"error\":\"method_not_allowed\"}"))
    case .notFound: return .now(.json(404, "{\"error\":\"not_found\"}"))
    }
}
idp.connectionCounts.withLock {
    $0 = { .init(opened: server.connectionsOpened, handshakesFull: server.tlsHandshakesFull, handshakesResumed: server.tlsHandshakesResumed) }
}
do { try server.start() } catch {
    FileHandle.standardError.write(Data("dev-idp: \(error)\n".utf8))
    exit(1)
}
// One JSON line with the broker's field names, so that every log of a test run reads alike.
let started = ISO8601DateFormatter()
started.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
FileHandle.standardError.write(Data("{\"timestamp\":\"\(started.string(from: Date()))\",\"severity_text\":\"INFO\",\"body\":\"dev-idp listening\",\"issuer\":\"\(idp.issuer)\"}\n".utf8))
// _exit is async-signal-safe; exit() would run the libraries' destructors under the HTTP threads.
signal(SIGTERM) { _ in _exit(0) }
signal(SIGINT) { _ in _exit(0) }
dispatchMain()
