import Foundation

/// TestCA makes a certificate authority and certificates signed by it with the openssl CLI, in
/// a folder of the test's own: server certificates for 127.0.0.1 (and DNS names, wildcards
/// included) and client certificates. Two TestCAs are unrelated: neither trusts the other's
/// certificates (e.g. a provider's certificate refused by a client that trusts another CA).
struct TestCA: Sendable {
    let dir: URL
    let name: String

    init(name: String = "test-ca") throws {
        dir = TestEnv.logDir.appendingPathComponent(TestEnv.uniqueName("pki"))
        self.name = name
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                          "-keyout", path("\(name).key"), "-out", path("\(name).pem"), "-subj", "/CN=\(name)"])
    }

    /// A CA made elsewhere (its certificate and key copied into a folder of the test's own).
    init(copying certificate: String, key: String, name: String = "copied-ca") throws {
        dir = TestEnv.logDir.appendingPathComponent(TestEnv.uniqueName("pki"))
        self.name = name
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: certificate, toPath: path("\(name).pem"))
        try FileManager.default.copyItem(atPath: key, toPath: path("\(name).key"))
    }

    func path(_ file: String) -> String { dir.appendingPathComponent(file).path }
    var certificate: String { path("\(name).pem") }
    /// The CA certificate as PEM text (trust anchors given inline rather than as a file).
    var pem: String { (try? String(contentsOfFile: certificate, encoding: .utf8)) ?? "" }

    /// Issues `cn`: a server certificate for 127.0.0.1 and `dnsNames` (`*.idp.localhost`: any
    /// one label before it; OpenSSL refuses a wildcard with fewer than two labels after it, so
    /// never `*.localhost`), or a client one; answers (certificate, key) paths.
    /// `file`: the files' name when not `cn` (another certificate of the same subject).
    @discardableResult
    func issue(_ cn: String, server: Bool, dnsNames: [String] = [], file: String? = nil) throws -> (cert: String, key: String) {
        let f = file ?? cn
        let ext = path("\(f).ext")
        let names = (dnsNames.map { "DNS:" + $0 } + ["IP:127.0.0.1"]).joined(separator: ",")
        try (server ? "subjectAltName=\(names)\nextendedKeyUsage=serverAuth\n" : "extendedKeyUsage=clientAuth\n")
            .write(toFile: ext, atomically: true, encoding: .utf8)
        try Self.openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("\(f).key"),
                          "-out", path("\(f).csr"), "-subj", "/CN=\(cn)"])
        try Self.openssl(["x509", "-req", "-in", path("\(f).csr"), "-CA", certificate, "-CAkey", path("\(name).key"), "-CAcreateserial",
                          "-days", "2", "-extfile", ext, "-out", path("\(f).pem")])
        return (path("\(f).pem"), path("\(f).key"))
    }

    /// A self-signed CA (basicConstraints CA:TRUE) valid only from `start` to `end`
    /// (YYYYMMDDHHMMSSZ) — in the past for an expired one. `openssl x509 -req` cannot backdate;
    /// `openssl ca` can, with a database of its own in this folder.
    func pastCA(_ cn: String, start: String = "20200101000000Z", end: String = "20210101000000Z") throws -> String {
        let db = dir.appendingPathComponent(cn + "-db")
        try FileManager.default.createDirectory(at: db, withIntermediateDirectories: true)
        let file = { (name: String) in db.appendingPathComponent(name).path }
        try "".write(toFile: file("index.txt"), atomically: true, encoding: .utf8)
        try "01\n".write(toFile: file("serial"), atomically: true, encoding: .utf8)
        try """
            [ca]
            default_ca = past
            [past]
            database = \(file("index.txt"))
            new_certs_dir = \(db.path)
            serial = \(file("serial"))
            default_md = sha256
            policy = any
            unique_subject = no
            [any]
            commonName = supplied
            [root]
            basicConstraints = critical,CA:TRUE
            keyUsage = critical,keyCertSign,cRLSign

            """.write(toFile: file("ca.cnf"), atomically: true, encoding: .utf8)
        try Self.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("\(cn).key"),
                          "-out", path("\(cn).csr"), "-subj", "/CN=\(cn)"])
        try Self.openssl(["ca", "-batch", "-config", file("ca.cnf"), "-selfsign", "-keyfile", path("\(cn).key"), "-in", path("\(cn).csr"),
                          "-out", path("\(cn).pem"), "-startdate", start, "-enddate", end, "-extensions", "root", "-notext"])
        return path("\(cn).pem")
    }

    /// The certificate's SHA-256 as openssl prints it (`AB:CD:…`).
    static func fingerprint(_ cert: String) throws -> String {
        let out = try openssl(["x509", "-in", cert, "-noout", "-fingerprint", "-sha256"])
        return String(out.split(separator: "=").last ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @discardableResult
    static func openssl(_ args: [String]) throws -> String {
        try Self.run("/usr/bin/openssl", args)
    }

    /// Runs a tool; throws with its stderr when it fails.
    @discardableResult
    static func run(_ tool: String, _ args: [String], stdin: String? = nil) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input
        try p.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let d = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw TestEnv.Missing(description: "\(tool) \(args.prefix(2).joined(separator: " ")) failed: \(String(decoding: e, as: UTF8.self))")
        }
        return String(decoding: d, as: UTF8.self)
    }
}
