import BrokerCrypto
import Foundation
import Testing

/// The development IdP's protected resource, driven over HTTP with real tokens as an upstream
/// API is by the broker's proxy: what it answers, how it refuses (RFC 6750 §3, RFC 9449 §7),
/// when a token dies, its faults, and bodies of any size streamed both ways.
@Suite("Development IdP: the protected resource", .serialized)
struct DevIdPResourceTests {
    /// A dev IdP with one confidential client.
    struct Fixture {
        let idp: DevIdPServer
        let client: String
        let secret = "resource-secret"
        let redirect = "http://127.0.0.1:1/cb"

        init(accessTTL: Int = 3600) async throws {
            idp = try await DevIdPServer()
            client = TestEnv.uniqueName("res")
            try await idp.registerClient(client, secret: secret, redirectURI: redirect, accessTTL: accessTTL)
        }

        /// A signed-in subject's tokens (code flow with PKCE at the IdP).
        func login(_ subject: String) async throws -> (access: String, refresh: String, expiresIn: Int) {
            try await idp.login(client: client, secret: secret, redirectURI: redirect, subject: subject)
        }

        func call(_ method: String = "GET", _ path: String = "/resource", token: String?, scheme: String = "Bearer",
                  body: Data? = nil) async throws -> HTTP.Reply {
            try await idp.call(method, idp.issuer + path, body: body, headers: token.map { ["Authorization": "\(scheme) \($0)"] } ?? [:])
        }

        func counters() async throws -> [String: Any] { try await idp.counters(client: client) }

        func stop() { idp.process.stop() }
    }

    /// curl with a bounded time; its stdout.
    static func curl(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-sS", "--max-time", "120"] + args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

    /// The bytes `/resource/bytes` promises: SplitMix64's words for 1, 2, 3, …, little-endian.
    static func expectedBytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: (n + 7) / 8 * 8)
        for k in 0..<(out.count / 8) {
            var z = UInt64(k + 1) &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            for i in 0..<8 { out[k * 8 + i] = UInt8(truncatingIfNeeded: z >> (8 * UInt64(i))) }
        }
        return Array(out.prefix(n))
    }

    @Test("GET, POST, PUT, PATCH and DELETE /resource answer who a bearer token is for; another method is 405")
    func whoTheTokenIsFor() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("ada")
        for m in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            let r = try expectStatus(try await f.call(m, token: t.access), 200)
            #expect(r["sub"] as? String == "ada" && r["client_id"] as? String == f.client && r["bound"] as? Bool == false, "\(m): \(r.text)")
        }
        #expect(try await f.call("OPTIONS", token: t.access).status == 405)
        #expect(try await f.call("GET", "/resource/nothing", token: t.access).status == 404)
        #expect(try await f.counters()["resource_accepted"] as? Int == 5)
    }

    @Test("/resource/echo answers the method, raw path and query, every header in order and the body's length and SHA-256")
    func echo() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("eve")
        let out = try Self.curl(["-X", "PATCH", "-H", "Authorization: Bearer \(t.access)", "-H", "X-Second: 2", "-H", "X-First: 1",
                                 "-H", "X-First: again", "-H", "Content-Type: text/plain", "--data-binary", "hello, upstream",
                                 f.idp.issuer + "/resource/echo?b=%20x&a=1"])
        let e = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        #expect(e["method"] as? String == "PATCH" && e["path"] as? String == "/resource/echo" && e["query"] as? String == "b=%20x&a=1")
        let headers = (e["headers"] as? [[String]] ?? []).filter { $0.count == 2 }
        let names = headers.map { $0[0] }
        #expect(headers.contains(["authorization", "Bearer \(t.access)"]) && headers.contains(["content-type", "text/plain"]))
        let mine = headers.filter { $0[0].hasPrefix("x-") }
        #expect(mine == [["x-second", "2"], ["x-first", "1"], ["x-first", "again"]], "\(headers)")
        #expect(names.allSatisfy { $0 == $0.lowercased() } && names.contains("host"))
        let helloDigest = Self.hex(try SHA256.hash(Array("hello, upstream".utf8)))
        #expect(e["body_bytes"] as? Int == 15 && e["body_sha256"] as? String == helloDigest)
        #expect(e["sub"] as? String == "eve")
        // Without a body: length 0 and the digest of nothing.
        let empty = try expectStatus(try await f.call("GET", "/resource/echo", token: t.access), 200)
        let emptyDigest = Self.hex(try SHA256.hash([UInt8]()))
        #expect(empty["body_bytes"] as? Int == 0 && empty["body_sha256"] as? String == emptyDigest)
    }

    @Test("refusals are RFC 6750 §3 Bearer challenges: no error without credentials, invalid_token for a bad token; plain_401 drops the error")
    func bearerChallenges() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("bob")
        let none = try await f.call(token: nil)
        let noneChallenge = none.headers["www-authenticate"] ?? ""
        #expect(none.status == 401 && noneChallenge.hasPrefix("Bearer realm=\"dev\"") && !noneChallenge.contains("error="), "\(noneChallenge)")
        #expect(noneChallenge.contains("DPoP realm=\"dev\", algs=\"ES256 PS256\""), "both schemes are offered: \(noneChallenge)")
        let bad = try await f.call(token: "not-a-token")
        #expect(bad.status == 401 && bad.headers["www-authenticate"]?.hasPrefix("Bearer realm=\"dev\", error=\"invalid_token\", error_description=") == true,
                "\(bad.headers)")
        #expect(bad["error"] as? String == "invalid_token")
        // A bearer token under the DPoP scheme: refused with the challenge of the token's scheme.
        let wrongScheme = try await f.call(token: t.access, scheme: "DPoP")
        #expect(wrongScheme.status == 401 && wrongScheme.headers["www-authenticate"]?.hasPrefix("Bearer ") == true)

        let settings = try await f.idp.resourceSettings(plain401: true)
        #expect(settings["plain_401"] as? Bool == true)
        let plain = try await f.call(token: "not-a-token")
        #expect(plain.status == 401 && plain.headers["www-authenticate"] == "Bearer realm=\"dev\"" && plain["error"] == nil, "\(plain.headers)")
        try await f.idp.resourceSettings(plain401: false)
        try expectStatus(try await f.call(token: t.access), 200)
        let c = try await f.counters()
        #expect((c["resource_refusals_by_reason"] as? [String: Int])?["invalid_token"] == 1, "only the known token's refusal is the client's: \(c)")
    }

    @Test("an access token dies at its expiry, at its revocation (RFC 7009), with its revoked grant, and when killed; later tokens live")
    func tokenDeath() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        // Revocation of the access token itself.
        let a = try await f.login("ann")
        try expectStatus(try await f.call(token: a.access), 200)
        let basic = "Basic " + Data("\(f.client):\(f.secret)".utf8).base64EncodedString()
        let form = ["Authorization": basic, "Content-Type": "application/x-www-form-urlencoded"]
        try expectStatus(try await f.idp.call("POST", f.idp.issuer + "/revoke", body: Data("token=\(a.access)".utf8), headers: form), 200)
        let revoked = try await f.call(token: a.access)
        #expect(revoked.status == 401 && revoked.headers["www-authenticate"]?.contains("error=\"invalid_token\"") == true)
        #expect(try await f.idp.introspection(a.access, client: f.client, secret: f.secret)["active"] as? Bool == false)
        // Revocation of the refresh token: the grant's access tokens die with it.
        let b = try await f.login("ben")
        try expectStatus(try await f.idp.call("POST", f.idp.issuer + "/revoke", body: Data("token=\(b.refresh)".utf8), headers: form), 200)
        #expect(try await f.call(token: b.access).status == 401)

        // Kill: a subject's tokens so far, then the client's.
        let c1 = try await f.login("cat"), d1 = try await f.login("dan")
        #expect(try await f.idp.resourceKill(client: f.client, subject: "cat") == 1)
        #expect(try await f.call(token: c1.access).status == 401)
        try expectStatus(try await f.call(token: d1.access), 200)
        let c2 = try await f.login("cat")
        try expectStatus(try await f.call(token: c2.access), 200)
        // Every token issued so far is marked, dead already or not: ann's, ben's, dan's, cat's second.
        #expect(try await f.idp.resourceKill(client: f.client) == 4)
        #expect(try await f.call(token: c2.access).status == 401)
        #expect(try await f.call(token: d1.access).status == 401)
        try expectStatus(try await f.call(token: try await f.login("dan").access), 200)
        let counts = try await f.counters()
        #expect((counts["resource_refusals_by_reason"] as? [String: Int])?["invalid_token"] == 5, "\(counts)")

        // Expiry.
        let short = try await Fixture(accessTTL: 1)
        defer { short.stop() }
        let e = try await short.login("eli")
        try expectStatus(try await short.call(token: e.access), 200)
        try await Task.sleep(for: .milliseconds(2100))
        let expired = try await short.call(token: e.access)
        #expect(expired.status == 401 && expired["error_description"] as? String == "the token is expired")
    }

    @Test("a fault answers the next calls 429 or 503 with Retry-After in seconds or as an HTTP-date, before the token is looked at")
    func rateLimits() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("ray")
        try await f.idp.resourceFault(status: 429, retryAfter: .seconds(7), count: 2)
        for _ in 0..<2 {
            let r = try await f.call(token: t.access)
            #expect(r.status == 429 && r.headers["retry-after"] == "7", "\(r.status) \(r.headers)")
        }
        try expectStatus(try await f.call(token: t.access), 200)
        try await f.idp.resourceFault(status: 503, retryAfter: .date(secondsAhead: 30))
        let r = try await f.call("GET", "/resource/echo", token: t.access)
        #expect(r.status == 503)
        let fmt = DateFormatter()
        fmt.locale = Locale(identifier: "en_US_POSIX")
        fmt.timeZone = TimeZone(identifier: "GMT")
        fmt.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = try #require(r.headers["retry-after"].flatMap { fmt.date(from: $0) }, "an IMF-fixdate: \(r.headers)")
        #expect(abs(date.timeIntervalSinceNow - 30) < 3)
        // Only the named client's calls, and a fault without Retry-After.
        try await f.idp.resourceFault(status: 429, retryAfter: nil, client: "someone-else")
        try expectStatus(try await f.call(token: t.access), 200)
        try await f.idp.resourceFaultClear()
        try await f.idp.resourceFault(status: 429, retryAfter: nil)
        let bare = try await f.call(token: t.access)
        #expect(bare.status == 429 && bare.headers["retry-after"] == nil)
        #expect(try await f.counters()["resource_rate_limited"] as? Int == 4)
    }

    @Test("delay_ms answers late without holding the server's threads")
    func delay() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("del")
        try await f.idp.resourceDelay(ms: 800)
        let started = Date()
        async let slow = withThrowingTaskGroup(of: Int.self) { g in
            for _ in 0..<4 { g.addTask { try await f.call(token: t.access).status } }
            return try await g.reduce(into: [Int]()) { $0.append($1) }
        }
        try await Task.sleep(for: .milliseconds(200))
        let quick = Date()
        try expectStatus(try await f.idp.call("GET", f.idp.issuer + "/stats"), 200)
        #expect(Date().timeIntervalSince(quick) < 0.4, "the IdP answered other requests while four answers were due later")
        #expect(try await slow == [200, 200, 200, 200])
        #expect(Date().timeIntervalSince(started) >= 0.8)
        try await f.idp.resourceDelay(ms: 0)
    }

    @Test("/resource/redirect answers 302 to another host or the same origin, only with a valid token")
    func redirects() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("red")
        let away = "http://elsewhere.example:8443/steal?x=1"
        let r = try await f.call("GET", "/resource/redirect?to=" + away.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!, token: t.access)
        #expect(r.status == 302 && r.headers["location"] == away)
        let same = try await f.call("GET", "/resource/redirect?to=%2Fresource%2Fecho&status=307", token: t.access)
        #expect(same.status == 307 && same.headers["location"] == "/resource/echo")
        #expect(try await f.call("GET", "/resource/redirect?to=%2Fresource", token: nil).status == 401)
    }

    @Test("a 50 MB upload is streamed in: its length and SHA-256 come back and are counted")
    func upload() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("upl")
        var bytes = [UInt8](repeating: 0, count: 50 << 20)
        for i in stride(from: 0, to: bytes.count, by: 997) { bytes[i] = UInt8(i % 251) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("resource-up-\(getpid())")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let before = f.idp.residentBytes()
        let out = try Self.curl(["-H", "Authorization: Bearer \(t.access)", "-H", "Content-Type: application/octet-stream",
                                 "--data-binary", "@\(file.path)", f.idp.issuer + "/resource/upload"])
        let r = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        let digest = Self.hex(try SHA256.hash(bytes))
        #expect(r["bytes"] as? Int == 50 << 20 && r["sha256"] as? String == digest)
        #expect(f.idp.residentBytes() - before < 16 << 20, "the upload was held")
        #expect(try await f.counters()["resource_bytes_in"] as? Int == 50 << 20)
        // A refused upload gets its 401, not a connection closed under it.
        let refused = try Self.curl(["-o", "/dev/null", "-w", "%{http_code}", "--data-binary", "@\(file.path)", f.idp.issuer + "/resource/upload"])
        #expect(refused == "401")
    }

    @Test("/resource/bytes streams its promised bytes with Content-Length; 1 GB grows the IdP's memory by less than 16 MB")
    func download() async throws {
        let f = try await Fixture()
        defer { f.stop() }
        let t = try await f.login("dl")
        let auth = "Authorization: Bearer \(t.access)"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("resource-down-\(getpid())")
        defer { try? FileManager.default.removeItem(at: file) }
        let head = try Self.curl(["-D", "-", "-o", file.path, "-H", auth, f.idp.issuer + "/resource/bytes?n=1000003"])
        #expect(head.lowercased().contains("content-length: 1000003"), "\(head)")
        #expect([UInt8](try Data(contentsOf: file)) == Self.expectedBytes(1_000_003))

        let before = f.idp.residentBytes()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-sS", "--max-time", "240", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "-H", auth,
                       f.idp.issuer + "/resource/bytes?n=\(1 << 30)"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        var peak = before
        while p.isRunning {
            peak = max(peak, f.idp.residentBytes())
            try await Task.sleep(for: .milliseconds(50))
        }
        let result = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(result == "200 \(1 << 30)")
        #expect(peak - before < 16 << 20, "RSS grew by \(peak - before) bytes")
        let c = try await f.counters()
        #expect(c["resource_bytes_out"] as? Int == 1_000_003 + (1 << 30), "\(c)")
    }

    @Test("a DPoP-bound token opens /resource/echo with a proof for that URL (query aside); refusals are DPoP challenges")
    func dpopChallenges() async throws {
        let (w, idpClient) = try await DPoPTests.world()
        defer { w.stop() }
        let s = try expectStatus(try await w.login(subject: "dee", client: "dpop"), 200)["session_id"] as! String
        let echo = w.idp.issuer + "/resource/echo"
        let t = try expectStatus(try await w.token(s, body: ["dpop": [["htm": "POST", "htu": echo + "?ignored=1"], ["htm": "POST", "htu": w.idp.issuer + "/resource"]]]), 200)
        let token = t["access_token"] as! String, proofs = DPoPTests.proofs(t)
        func post(_ proof: String?, scheme: String = "DPoP") async throws -> HTTP.Reply {
            var h = ["Authorization": "\(scheme) \(token)"]
            if let proof { h["DPoP"] = proof }
            return try await HTTP.request("POST", echo + "?q=1", body: Data("x".utf8), headers: h)
        }
        let ok = try expectStatus(try await post(proofs[0]), 200)
        #expect((ok["headers"] as? [[String]] ?? []).contains { $0.first == "dpop" } && ok["query"] as? String == "q=1")
        let elsewhere = try await post(proofs[1])
        #expect(elsewhere.status == 401 && elsewhere.headers["www-authenticate"]?.hasPrefix("DPoP realm=\"dev\", error=\"invalid_dpop_proof\"") == true,
                "\(elsewhere.headers)")
        #expect(elsewhere.headers["www-authenticate"]?.contains("algs=\"ES256 PS256\"") == true)
        let asBearer = try await post(nil, scheme: "Bearer")
        #expect(asBearer.status == 401 && asBearer.headers["www-authenticate"]?.hasPrefix("DPoP realm=\"dev\", error=\"invalid_token\"") == true)
        let c = try await w.idp.counters(client: idpClient)
        let reasons = c["resource_refusals_by_reason"] as? [String: Int] ?? [:]
        #expect(reasons["invalid_dpop_proof"] == 1 && reasons["invalid_token"] == 1 && c["resource_accepted"] as? Int == 1, "\(c)")
    }
}
