/// FrontDoor holds the request shapes RFC 9112 says a server must refuse, checked before a
/// request reaches a route, on what MHD parsed: the raw request target and every header line.
/// A refused request gets 400 and its connection closed (§6.3: framing that cannot be trusted
/// leaves the rest of the stream unusable).
public enum FrontDoor {
    /// Why the request target must be refused, or nil. Ids are plain segments: an escaped '/',
    /// '\' or control character would let one segment stand for several (`%2F`) or cut a path
    /// short (`%00`), and MHD decodes the path before routing. A query value is decoded too.
    public static func targetProblem(_ target: UnsafeBufferPointer<UInt8>) -> String? {
        // In the path no escaped '/', '\' or control character; in the query no escaped control
        // character (MHD decodes values and a NUL would cut one short; '/' is fine there).
        var inQuery = false
        var i = target.startIndex
        while i < target.endIndex {
            let b = target[i]
            if b == UInt8(ascii: "?") { inQuery = true }
            if b == UInt8(ascii: "%") {
                guard i + 2 < target.endIndex, let hi = hex(target[i + 1]), let lo = hex(target[i + 2]) else {
                    return inQuery ? nil : "the path has a malformed percent-escape"
                }
                let byte = hi << 4 | lo
                let control = byte < 0x20 || byte == 0x7f
                if control || (!inQuery && (byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\"))) {
                    let hexText = (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
                    return inQuery ? "the query escapes a control character (%\(hexText))"
                        : "the path escapes '/', '\\' or a control character (%\(hexText))"
                }
                i += 3
            } else {
                i += 1
            }
        }
        return nil
    }

    /// HeaderCheck reads a request's header lines one by one, as MHD holds them (no copy), and
    /// then says why the section must be refused, or nil (RFC 9112 §3.2, §5, §6.1, §6.3).
    public struct HeaderCheck {
        var lengths = 0, codings = 0, hosts = 0
        var chunkedOnly = true
        var problem: String?

        public init() {}

        /// One header line; `valueLength` is the length MHD counted, longer than `value` (read up
        /// to a NUL) when the value contained one.
        public mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, valueLength: Int) {
            guard problem == nil else { return }
            guard !name.isEmpty, name.allSatisfy(FrontDoor.isTokenByte) else {
                problem = "a header name is not a token (whitespace before the colon, or a control character)"
                return
            }
            guard valueLength == value.count, value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7f) }) else {
                problem = "a header value contains a control character"
                return
            }
            if FrontDoor.equalsLowercase(name, "content-length") {
                lengths += 1
                if value.isEmpty || value.count > 18 || !value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { problem = "Content-Length is not a number" }
            } else if FrontDoor.equalsLowercase(name, "transfer-encoding") {
                codings += 1
                if !FrontDoor.equalsLowercase(value, "chunked") { chunkedOnly = false }
            } else if FrontDoor.equalsLowercase(name, "host") {
                hosts += 1
            }
        }

        /// The verdict, for a request of `version` (e.g. "HTTP/1.1").
        public func finish(version: String) -> String? {
            if let problem { return problem }
            if lengths > 1 { return "more than one Content-Length" }
            if codings > 0 && lengths > 0 { return "both Transfer-Encoding and Content-Length" }
            if codings > 1 || !chunkedOnly { return "a transfer coding other than chunked" }
            if hosts > 1 { return "more than one Host header" }
            if hosts == 0 && version == "HTTP/1.1" { return "no Host header" }
            return nil
        }
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5a, 0x61...0x7a: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// True when `bytes`, ASCII-lowercased, equal `lower` (itself lowercase).
    static func equalsLowercase(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        equalsLowercase(bytes, UnsafeBufferPointer(start: lower.utf8Start, count: lower.utf8CodeUnitCount))
    }

    /// The same against lowercase bytes.
    static func equalsLowercase(_ bytes: UnsafeBufferPointer<UInt8>, _ l: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count == l.count else { return false }
        for i in 0..<bytes.count {
            let b = bytes[i]
            if (b >= 0x41 && b <= 0x5a ? b + 32 : b) != l[i] { return false }
        }
        return true
    }

    static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }
}
