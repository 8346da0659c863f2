/// FormEncoding writes application/x-www-form-urlencoded bodies and query strings (HTML 4.01
/// §17.13.4.1, as RFC 6749 §2.3.1, §4.1.1 and Appendix B require for token requests, client
/// credentials and authorization requests).
public enum FormEncoding {
    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._*".utf8)

    public static func encode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            if unreserved.contains(b) { out.unicodeScalars.append(Unicode.Scalar(b)) }
            else if b == 0x20 { out += "+" }
            else { out += "%" + String(b, radix: 16, uppercase: true).leftPad2 }
        }
        return out
    }

    public static func body(_ fields: [(String, String)]) -> String {
        fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }
}

private extension String {
    var leftPad2: String { count < 2 ? "0" + self : self }
}
